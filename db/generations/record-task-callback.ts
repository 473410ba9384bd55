import type { Knex } from 'knex';
import type { GenerationStatus } from './model';

/**
 * The provider called back: the task `taskId` of a `processing` generation is finished. In ONE
 * statement (no transaction round trips on the slot's hand-over): recorded once per generation,
 * only for the task the generation runs and before its result is stored; its poll made due now (a
 * poll loop reads the outcome from the provider at once) unless a poll of it is under way (its
 * claim, `claimed_by`: that poll reads the outcome, or `schedulePoll` sees the callback and makes
 * the next one due at once; never two copies of one result); its slot freed (the provider's work is
 * over, as `pool/release-generation-slot.ts` frees it after a poll); and `NOTIFY provider_task_done`
 * sent (the payload of `provider_task_done` in `db/channels.ts`), delivered at commit. `recorded` then.
 * Nothing changes otherwise: `pending` when the generation's submission is not recorded yet (a
 * callback faster than the submission's answer: the same statement reads the status, so the caller
 * needs no second one), `ignored` for a replay, for another task (an orphan of a double
 * submission), for a generation no longer processing or absent.
 *
 * Its commit does not wait for the disk (`synchronous_commit` off for this statement's transaction
 * only: a flush less on the slot's hand-over). What a crash could lose is only "look now" and a
 * freed slot, both of which polling and the slot's lease recover; whatever acts on it (the next
 * submission on the slot) commits synchronously after it, which flushes it too.
 */
export type TaskCallbackOutcome = 'recorded' | 'pending' | 'ignored';

export async function recordTaskCallback(db: Knex, callback: { generationId: string; taskId: string }): Promise<TaskCallbackOutcome> {
  const { rows: [row] } = await db.raw<{ rows: { recorded: boolean; status: GenerationStatus | null }[] }>(
    `with recorded as (
       update generations set task_callback_at = now(), next_poll_at = case when claimed_by is null then now() else next_poll_at end
       where id = :generationId and status = 'processing' and provider_task_id = :taskId
         and task_callback_at is null and result_stored_at is null
       returning id
     ),
     freed as (
       update provider_slots set generation_id = null, lease_expires_at = null
       where generation_id in (select id from recorded)
     ),
     notified as (
       select pg_notify('provider_task_done', json_build_object('id', id)::text), set_config('synchronous_commit', 'off', true)
       from recorded
     )
     select exists (select 1 from notified) as recorded, (select status from generations where id = :generationId) as status`,
    callback,
  );
  if (row.recorded) return 'recorded';
  return row.status === 'pending' ? 'pending' : 'ignored';
}
