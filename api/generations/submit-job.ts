import type { Knex } from 'knex';
import type { PgBoss, SendOptions } from 'pg-boss';
import { bossIn, enqueueInTransaction, queues } from '../../db/boss';
import type { SubmitJobData } from './model';

/**
 * The `generation-submit` job of a pending generation: its place in the FIFO line (pg-boss fetches
 * by `created_on`). A job that has to wait again is failed into `retry`, which keeps its
 * `created_on` and so its place; the retry limit is effectively unlimited because waiting for a slot
 * is not an error (pending expiry is what ends a wait).
 */
const submitJobOptions: SendOptions = { retryLimit: 1_000_000, retryDelay: 0, retryBackoff: false };

interface CommandResult {
  affected: number;
}

/** The first ticket of a generation carries the generation's own id, so the row can name it up front. */
export async function sendSubmitJob(boss: PgBoss, trx: Knex.Transaction, generationId: string, jobId: string = generationId): Promise<string> {
  const data: SubmitJobData = { generationId };
  const id = await enqueueInTransaction(boss, trx, queues.generationSubmit, data, { ...submitJobOptions, id: jobId });
  if (!id) throw new Error(`generation-submit job ${jobId} was not created for ${generationId}`);
  return id;
}

/** The generation left `pending` (submitted or failed): its ticket is done, whatever state it is in. */
export async function finishSubmitJob(boss: PgBoss, trx: Knex.Transaction, jobId: string): Promise<void> {
  const db = await bossIn(trx);
  const completed = (await boss.complete(queues.generationSubmit, jobId, null as unknown as object, { db })) as unknown as CommandResult;
  if (completed.affected === 0) await boss.cancel(queues.generationSubmit, jobId, { db });
}

/**
 * Puts the ticket back in line at its old place (provider busy or unreachable, no slot after all,
 * or a crashed worker's claim). Answers false when there was no such job to put back.
 */
export async function returnSubmitJob(boss: PgBoss, trx: Knex.Transaction, jobId: string): Promise<boolean> {
  const db = await bossIn(trx);
  const failed = (await boss.fail(queues.generationSubmit, jobId, null as unknown as object, { db })) as unknown as CommandResult;
  if (failed.affected > 0) return true;
  const retried = (await boss.retry(queues.generationSubmit, jobId, { db })) as unknown as CommandResult;
  return retried.affected > 0;
}
