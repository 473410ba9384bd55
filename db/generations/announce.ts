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
export async function notifyGenerationStatus(trx: Knex.Transaction, event: GenerationStatusEvent): Promise<void> {
  await notify(trx, 'generation_status', { id: event.id, user_id: event.user_id, status: event.status, error_code: event.error_code });
}

/** A terminal status also sends a push (the contract: every terminal status, early `failed` included). */
export async function announceTerminalStatus(trx: Knex.Transaction, boss: PgBoss, event: GenerationStatusEvent & { status: 'succeeded' | 'failed' }): Promise<void> {
  await notifyGenerationStatus(trx, event);
  await enqueue(boss, trx, 'push-send', generationPush({ userId: event.user_id, generationId: event.id, status: event.status, errorCode: event.error_code }));
}
