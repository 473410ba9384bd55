import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { ProviderKind } from '../../common/model-route';
import { bossIn, enqueue, submitQueueOf } from '../queues';

/**
 * The ticket of a pending generation: a job of its kind's `generation-submit.<kind>` queue, its place
 * in that FIFO line (the dispatcher fetches tickets as pg-boss hands them out: by `created_on`).
 * Every step of a ticket is a call of pg-boss's own API, in the caller's transaction where it has
 * one (`bossIn`): no statement of ours reads or writes pg-boss's tables.
 */

/** What pg-boss's commands answer (its typings leave `CommandResponse` empty). */
interface CommandResult {
  affected: number;
}

/** The first ticket of a generation carries the generation's own id, so the row can name it up front. */
export async function sendSubmitJob(boss: PgBoss, trx: Knex.Transaction, kind: ProviderKind, generationId: string, jobId: string = generationId): Promise<string> {
  const id = await enqueue(boss, trx, submitQueueOf(kind), { generationId }, { id: jobId });
  if (!id) throw new Error(`generation-submit job ${jobId} was not created for ${generationId}`);
  return id;
}

/**
 * The generation left the line (submitted, or failed at submission or while it waited): its ticket is
 * done, in whatever state it is (`includeQueued`: one still waiting is completed too). Outside a
 * transaction (`db` null) on pg-boss's own connections.
 */
export async function finishSubmitJob(boss: PgBoss, db: Knex.Transaction | null, kind: ProviderKind, jobId: string): Promise<void> {
  await boss.complete(submitQueueOf(kind), jobId, null, { includeQueued: true, ...(db ? { db: bossIn(db) } : {}) });
}

/** The generation was cancelled by its owner while it waited: its ticket is cancelled. */
export async function cancelSubmitJob(boss: PgBoss, trx: Knex.Transaction, kind: ProviderKind, jobId: string): Promise<void> {
  await boss.cancel(submitQueueOf(kind), jobId, { db: bossIn(trx) });
}

/**
 * Puts the ticket back in line at its old place (provider busy or unreachable, no slot after all,
 * a crashed worker's claim, or a generation another transaction holds): cancelled, then resumed,
 * each an update of the job in place that keeps its `created_on`. In place, so a transaction waiting
 * to end the same ticket (a cancel, an expiry) ends the ticket as it is now. Answers false when
 * there was no such ticket to put back (finished, or gone).
 */
export async function returnSubmitJob(boss: PgBoss, trx: Knex.Transaction, kind: ProviderKind, jobId: string): Promise<boolean> {
  const queue = submitQueueOf(kind);
  const db = bossIn(trx);
  await boss.cancel(queue, jobId, { db });
  const resumed = (await boss.resume(queue, jobId, { db })) as unknown as CommandResult;
  return resumed.affected > 0;
}
