import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { notify } from '../channels';
import { generationPush } from '../push/push-job';
import { enqueue } from '../queues';
import type { GenerationStatusEvent } from './model';

/**
 * Every status change of a generation, creation included, is announced in the transaction that
 * makes it: a NOTIFY on `generation_status` (the SSE streams and the dispatchers listen), delivered
 * only if the change commits.
 */
async function notifyGenerationStatus(trx: Knex.Transaction, event: GenerationStatusEvent): Promise<void> {
  await notify(trx, 'generation_status', { id: event.id, user_id: event.user_id, status: event.status, error_code: event.error_code });
}

/**
 * `notifyGenerationStatus` as an expression over a row with `id` and `user_id`, for a transition
 * that announces itself in its own statement: the same payload (`GenerationStatusEvent`), no
 * statement of its own. A new generation's row also gives `photo_headers_checked`: the dispatchers
 * read nothing ahead for it when the API read its photos' headers.
 */
export function generationStatusNotifySql(status: 'pending' | 'processing' | 'succeeded'): string {
  const checked = status === 'pending' ? ", 'photo_headers_checked', photo_headers_checked" : '';
  // cast(), not `::text`: knex would read `:text` as the named binding of a statement that has one.
  return `pg_notify('generation_status', cast(json_build_object('id', id, 'user_id', user_id, 'status', '${status}', 'error_code', null${checked}) as text))`;
}

/**
 * What the RETURNING of a terminal transition adds, so that whether the user has a push device
 * costs no statement of its own.
 */
export const HAS_PUSH_DEVICE = 'exists (select 1 from push_devices d where d.user_id = generations.user_id) as has_push_device';

/**
 * A terminal status also sends a push (the contract: every terminal status, early `failed` included)
 * to every device of the user: a user without one (most guests) gets no `push-send` job, which
 * would only have found no device, at five statements per generation.
 */
export async function pushTerminalStatus(
  trx: Knex.Transaction,
  boss: PgBoss,
  event: GenerationStatusEvent & { status: 'succeeded' | 'failed'; has_push_device: boolean },
): Promise<void> {
  if (!event.has_push_device) return;
  await enqueue(boss, trx, 'push-send', generationPush({ userId: event.user_id, generationId: event.id, status: event.status, errorCode: event.error_code }));
}

/** A terminal status's NOTIFY and push, for a transition that does not announce itself in its own statement. */
export async function announceTerminalStatus(
  trx: Knex.Transaction,
  boss: PgBoss,
  event: GenerationStatusEvent & { status: 'succeeded' | 'failed'; has_push_device: boolean },
): Promise<void> {
  await notifyGenerationStatus(trx, event);
  await pushTerminalStatus(trx, boss, event);
}
