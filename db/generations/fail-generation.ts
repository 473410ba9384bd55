import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { releaseGenerationSlot } from '../pool/release-generation-slot';
import { credit } from '../credits/ledger';
import { announceTerminalStatus, HAS_PUSH_DEVICE } from './announce';
import type { GenerationRow } from './model';
import { cancelSubmitJob, finishSubmitJob } from './submit-ticket';

/**
 * The status a failure moves from, as the guard of its statement: `waiting` is a pending generation
 * that no dispatcher is handing to the provider (no submission claim), the only one a cancel may take;
 * `unclaimed` one whose submission claim, if it had one, has run out, and whose task no provider's
 * webhook has named, what the pending expiry takes at its timeout: a dispatcher that claimed it, or
 * a webhook that named its task, since the expiry found it keeps it (the task is not left unwatched,
 * nor refunded once it ran); `abandoned` the same whether a webhook named its task or not, what the
 * expiry takes at twice its timeout (no worker adopted that task).
 */
const guards = {
  pending: "status = 'pending'",
  waiting: "status = 'pending' and dispatch_until is null",
  unclaimed: "status = 'pending' and (dispatch_until is null or dispatch_until < now()) and early_callback_task_id is null",
  abandoned: "status = 'pending' and (dispatch_until is null or dispatch_until < now())",
  processing: "status = 'processing'",
} as const;

export type FailedFrom = keyof typeof guards;

/**
 * pending | processing -> failed, with the refund in the same transaction: a `refund` ledger row
 * whose reference is the generation id, like its `reserve`. The guarded status makes a duplicate or
 * late call a no-op, and the ledger's unique (user, kind, reference) would refuse a second refund
 * anyway. Also gives back the slot and ends the FIFO ticket of a generation that never started:
 * cancelled when its owner cancelled it while it waited, else finished. The generation's row is
 * locked before its ticket, as everywhere: the dispatcher, which fetches tickets first, never waits
 * for a generation (`claim-next-with-slots.ts`), so the two orders cannot deadlock.
 */
export async function failGeneration(
  trx: Knex.Transaction,
  boss: PgBoss,
  failure: { generationId: string; from: FailedFrom; errorCode: string },
): Promise<boolean> {
  const { rows: [row] } = await trx.raw<{ rows: (Pick<GenerationRow, 'id' | 'user_id' | 'cost' | 'submit_job_id' | 'provider_kind'> & { has_push_device: boolean })[] }>(
    `update generations
     set status = 'failed', error_code = :errorCode, finished_at = now(), next_poll_at = null, dispatch_until = null
     where id = :generationId and ${guards[failure.from]}
     returning id, user_id, cost, submit_job_id, provider_kind, ${HAS_PUSH_DEVICE}`,
    { generationId: failure.generationId, errorCode: failure.errorCode },
  );
  if (!row) return false;
  await credit(trx, { userId: row.user_id, kind: 'refund', amount: row.cost, reference: row.id });
  await releaseGenerationSlot(trx, row.id);
  if (failure.from === 'waiting' && row.submit_job_id) await cancelSubmitJob(boss, trx, row.provider_kind, row.submit_job_id);
  if ((failure.from === 'pending' || failure.from === 'unclaimed' || failure.from === 'abandoned') && row.submit_job_id) await finishSubmitJob(boss, trx, row.provider_kind, row.submit_job_id);
  await announceTerminalStatus(trx, boss, { id: row.id, user_id: row.user_id, status: 'failed', error_code: failure.errorCode, has_push_device: row.has_push_device });
  return true;
}
