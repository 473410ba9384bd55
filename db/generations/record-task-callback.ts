import type { Knex } from 'knex';
import { commitWithoutFlush } from '../commit-without-flush';

/**
 * The provider called back: the task `taskId` of a generation is finished. In ONE statement (no
 * transaction round trips on the slot's hand-over):
 * - `recorded` when the generation is `processing` that task: recorded once per generation, before
 *   its result is stored; its poll made due now (a poll loop reads the outcome from the provider at
 *   once) unless a poll of it is under way (its claim, `claimed_by`: that poll reads the outcome, or
 *   `schedulePoll` sees the callback and makes the next one due at once; never two copies of one
 *   result); its slot freed (the provider's work is over, as `pool/release-generation-slot.ts` frees
 *   it after a poll) and stamped `called_back_at` (callbacks arrive: polls are a sparse fallback,
 *   `schedule-poll.ts`); and `NOTIFY provider_task_done` sent (the payload of `provider_task_done` in
 *   `db/channels.ts`), delivered at commit.
 * - `early` when the generation is still `pending` (the task ended before the provider's answer to
 *   the submission was recorded): the task it named is kept on the generation, and recording the
 *   submission of that task makes its first poll due at once (`mark-processing.ts`); that poll frees
 *   the slot.
 * - `ignored` otherwise, and nothing changes: a replay, another task (an orphan of a double
 *   submission), a generation finished or absent.
 *
 * One UPDATE decides between the first two on the row as it is when the statement holds it: when
 * the record of the submission commits while this statement waits for its row, Postgres evaluates
 * the conditions and the new values again on the committed row, so the callback is recorded, not
 * kept on a generation that is no longer pending.
 *
 * Its commit does not wait for the disk (`commit-without-flush.ts`: a flush less on the slot's
 * hand-over). What a crash could lose is only "look now" and a
 * freed slot, both of which polling and the slot's lease recover; whatever acts on it (the next
 * submission on the slot) commits synchronously after it, which flushes it too.
 */
export type TaskCallbackOutcome = 'recorded' | 'early' | 'ignored';

export async function recordTaskCallback(db: Knex, callback: { generationId: string; taskId: string }): Promise<TaskCallbackOutcome> {
  const { rows: [row] } = await db.raw<{ rows: { status: 'pending' | 'processing' | null }[] }>(
    `with called as (
       update generations
       set early_callback_task_id = case when status = 'pending' then :taskId else early_callback_task_id end,
         task_callback_at = case when status = 'processing' then now() else task_callback_at end,
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
    callback,
  );
  if (row.status === null) return 'ignored';
  return row.status === 'processing' ? 'recorded' : 'early';
}
