import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { GenerationRow } from '../model';
import { finishSubmitJob } from '../submit-job';
import { notifyGenerationStatus } from './announce';

/**
 * pending -> processing: the provider accepted the task. Records the task and the account, sets
 * `started_at` (the provider timeout counts from here) and the first poll; the FIFO ticket is done.
 */
export async function markProcessing(
  trx: Knex.Transaction,
  boss: PgBoss,
  submission: { generationId: string; accountId: number; taskId: string; firstPollInMs: number },
): Promise<boolean> {
  const [row]: Pick<GenerationRow, 'id' | 'user_id' | 'submit_job_id'>[] = await trx('generations')
    .where({ id: submission.generationId, status: 'pending' })
    .update({
      status: 'processing',
      started_at: trx.fn.now(),
      provider_account_id: submission.accountId,
      provider_task_id: submission.taskId,
      next_poll_at: trx.raw("now() + ? * interval '1 millisecond'", [submission.firstPollInMs]),
      poll_count: 0,
      dispatch_until: null,
    })
    .returning(['id', 'user_id', 'submit_job_id']);
  if (!row) return false;
  if (row.submit_job_id) await finishSubmitJob(boss, trx, row.submit_job_id);
  await notifyGenerationStatus(trx, { id: row.id, user_id: row.user_id, status: 'processing', error_code: null });
  return true;
}
