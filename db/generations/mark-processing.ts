import type { Knex } from 'knex';
import { generationStatusNotifySql } from './announce';
import type { GenerationRow } from './model';
import { nextPollInMsSql, type PollPacing } from './schedule-poll';

/**
 * pending -> processing: the provider accepted the task (answered, or found by its client reference
 * after the answer was lost). Records the task and the account, sets `started_at` (the provider
 * timeout counts from here) and the first poll, by `PollPacing` for a task that has just started:
 * due at once when the provider already called back that this task ended
 * (`early_callback_task_id`, `record-task-callback.ts`), and that callback's answer kept for it (an
 * answer about another task is dropped). The submission is resolved and the change
 * announced in one statement, so it needs no transaction of its own. Answers the generation's
 * ticket, which the caller finishes (`finishSubmitJob`: pg-boss's own call), and in how many ms its
 * first poll is due (the poll loop need not look before), or null when nothing changed.
 */
export async function markProcessing(
  db: Knex,
  submission: { generationId: string; accountId: number; taskId: string },
  pacing: PollPacing,
): Promise<(Pick<GenerationRow, 'submit_job_id' | 'provider_kind'> & { firstPollInMs: number }) | null> {
  const { rows } = await db.raw<{ rows: (Pick<GenerationRow, 'submit_job_id' | 'provider_kind'> & { first_poll_in_ms: number })[] }>(
    `with processing as (
       update generations
       set status = 'processing', started_at = now(), provider_account_id = :accountId, provider_task_id = :taskId,
         next_poll_at = now() + case when early_callback_task_id = :taskId then 0 else ${nextPollInMsSql('0')} end * interval '1 millisecond',
         callback_answer = case when early_callback_task_id = :taskId then callback_answer end,
         early_callback_task_id = null, poll_count = 0, dispatch_until = null, claimed_by = null, submission_account_id = null
       where id = :generationId and status = 'pending'
       returning id, user_id, submit_job_id, provider_kind, extract(epoch from next_poll_at - now()) * 1000 as first_poll_in_ms
     )
     select submit_job_id, provider_kind, first_poll_in_ms, ${generationStatusNotifySql('processing')} from processing`,
    { ...submission, ...pacing },
  );
  return rows[0] ? { submit_job_id: rows[0].submit_job_id, provider_kind: rows[0].provider_kind, firstPollInMs: Number(rows[0].first_poll_in_ms) } : null;
}
