import type { Knex } from 'knex';

/**
 * The provider called back: the task `taskId` of a `processing` generation is finished. In ONE
 * statement (no transaction round trips on the slot's hand-over): recorded once per generation,
 * only for the task the generation runs and before its result is stored; its poll made due now (a
 * poll loop reads the outcome from the provider at once) unless a poll of it is under way (its
 * claim, `claimed_by`: that poll reads the outcome, or `schedulePoll` sees the callback and makes
 * the next one due at once; never two copies of one result); its slot freed (the provider's work is
 * over, as `pool/release-generation-slot.ts` frees it after a poll); and `NOTIFY provider_task_done`
 * sent (the payload of `provider_task_done` in `db/channels.ts`), delivered at commit. False for a replay, for another task (an orphan of a double
 * submission), for a generation no longer processing: nothing changes then.
 *
 * Its commit does not wait for the disk (`synchronous_commit` off for this statement's transaction
 * only: a flush less on the slot's hand-over). What a crash could lose is only "look now" and a
 * freed slot, both of which polling and the slot's lease recover; whatever acts on it (the next
 * submission on the slot) commits synchronously after it, which flushes it too.
 */
export async function recordTaskCallback(db: Knex, callback: { generationId: string; taskId: string }): Promise<boolean> {
  const { rowCount } = await db.raw<{ rowCount: number }>(
    `with recorded as (
       update generations set task_callback_at = now(), next_poll_at = case when claimed_by is null then now() else next_poll_at end
       where id = :generationId and status = 'processing' and provider_task_id = :taskId
         and task_callback_at is null and result_stored_at is null
       returning id
     ),
     freed as (
       update provider_slots set generation_id = null, lease_expires_at = null
       where generation_id in (select id from recorded)
     )
     select pg_notify('provider_task_done', json_build_object('id', id)::text), set_config('synchronous_commit', 'off', true)
     from recorded`,
    callback,
  );
  return rowCount > 0;
}
