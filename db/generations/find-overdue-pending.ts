import type { Knex } from 'knex';

/**
 * Up to `limit` generations pending longer than `timeoutS` and not being submitted right now, oldest
 * first. Not one whose task the provider's webhook already named (`early_callback_task_id`): that
 * task ran and is paid for; the sweeps adopt it instead of refunding the generation.
 */
export async function findOverduePending(db: Knex, timeoutS: number, limit: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    `select id from generations
     where status = 'pending' and created_at < now() - :timeoutS * interval '1 second'
       and (dispatch_until is null or dispatch_until < now()) and early_callback_task_id is null
     order by created_at limit :limit`,
    { timeoutS, limit },
  );
  return rows.map((row) => row.id);
}
