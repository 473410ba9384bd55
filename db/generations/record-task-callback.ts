import type { Knex } from 'knex';
import { commitWithoutFlush } from '../commit-without-flush';

/**
 * The provider called back: task `taskId` of a generation is finished. One statement, so the slot's
 * hand-over pays no transaction round trips:
 * - `recorded` (the generation is `processing` that task, first callback): its poll made due now
 *   unless one is under way, the callback's `answer` kept for that poll (or the next, after one
 *   under way), its slot freed and stamped `called_back_at`, `provider_task_done` sent;
 * - `early` (still `pending`: the task ended before its submission was recorded): the task and the
 *   answer are kept, and recording that task's submission makes its first poll due at once, with
 *   the answer (`mark-processing.ts`);
 * - `ignored`: a replay, another task, a finished or absent generation.
 * If the submission's record commits while this waits for the row, Postgres re-evaluates on the
 * committed row. The commit skips the disk flush: a crash loses only "poll now", the answer and a
 * freed slot, all recovered by polling and the slot's lease.
 */
export type TaskCallbackOutcome = 'recorded' | 'early' | 'ignored';

export async function recordTaskCallback(db: Knex, callback: { generationId: string; taskId: string; answer?: Record<string, unknown> | null }): Promise<TaskCallbackOutcome> {
  const { rows: [row] } = await db.raw<{ rows: { status: 'pending' | 'processing' | null }[] }>(
    `with called as (
       update generations
       set early_callback_task_id = case when status = 'pending' then :taskId else early_callback_task_id end,
         task_callback_at = case when status = 'processing' then now() else task_callback_at end,
         callback_answer = :answer::jsonb,
         next_poll_at = case when status = 'processing' and claimed_by is null then now() else next_poll_at end
       where id = :generationId
         and (status = 'pending'
           or (status = 'processing' and provider_task_id = :taskId and task_callback_at is null and result_stored_at is null))
       returning id, status
     ),
     recorded as (
       select id from called where status = 'processing'
     ),
     freed as (
       update provider_slots set generation_id = null, lease_expires_at = null, called_back_at = now()
       where generation_id in (select id from recorded)
     ),
     notified as (
       select pg_notify('provider_task_done', json_build_object('id', id)::text), ${commitWithoutFlush}
       from recorded
     )
     -- notified is read so that its NOTIFY runs (a plain select in a with clause runs only when read).
     select (select status from called) as status, (select count(*) from notified) as notified`,
    { ...callback, answer: callback.answer ? JSON.stringify(callback.answer) : null },
  );
  if (row.status === null) return 'ignored';
  return row.status === 'processing' ? 'recorded' : 'early';
}
