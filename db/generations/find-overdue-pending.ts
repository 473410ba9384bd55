import type { Knex } from 'knex';

/** An overdue generation, and whether a provider's webhook named its task (`early_callback_task_id`). */
export interface OverduePending {
  id: string;
  named: boolean;
}

/**
 * Up to `limit` generations pending longer than `timeoutS` and not being submitted right now, oldest
 * first. Not one whose task the provider's webhook already named (`early_callback_task_id`): that
 * task ran and is paid for; the sweeps adopt it instead of refunding the generation. Unless it is
 * still pending after twice the timeout (no worker holds its account's key any more to adopt it):
 * then it ends as the others do, so no generation stays pending for good. The expiry fails each
 * guarded on what it found (`unclaimed` or, named, `abandoned`: `fail-generation.ts`).
 */
export async function findOverduePending(db: Knex, timeoutS: number, limit: number): Promise<OverduePending[]> {
  const { rows } = await db.raw<{ rows: OverduePending[] }>(
    `select id, early_callback_task_id is not null as named from generations
     where status = 'pending' and created_at < now() - :timeoutS * interval '1 second'
       and (dispatch_until is null or dispatch_until < now())
       and (early_callback_task_id is null or created_at < now() - 2 * :timeoutS * interval '1 second')
     order by created_at limit :limit`,
    { timeoutS, limit },
  );
  return rows;
}
