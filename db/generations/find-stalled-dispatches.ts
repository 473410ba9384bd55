import type { Knex } from 'knex';

/** A submission claim is over when it ran out, or its process is dead. Shared with `take-back-stalled-dispatch.ts`. */
export const submissionClaimOver = '(dispatch_until < now() or (claimed_by is not null and not process_is_alive(claimed_by)))';

export interface StalledDispatch {
  id: string;
  /** The account a submission went to whose answer was never recorded; null when none was sent. */
  submission_account_id: number | null;
  /** That account's circuit is open (`pool/account-circuits.ts`): looked up only as its probe. */
  circuit_open: boolean;
  /** The task the provider's own webhook named while the submission was unresolved (`record-task-callback.ts`). */
  early_callback_task_id: string | null;
}

/**
 * Up to `limit` pending generations whose submission claim is over, oldest first: it ran out (a
 * worker stalled, or left the submission unresolved), or its process is dead (`process_is_alive`).
 */
export async function findStalledDispatches(db: Knex, limit: number): Promise<StalledDispatch[]> {
  const { rows } = await db.raw<{ rows: StalledDispatch[] }>(
    `select g.id, g.submission_account_id, g.early_callback_task_id, coalesce(a.circuit_opened_at is not null, false) as circuit_open
     from generations g left join provider_accounts a on a.id = g.submission_account_id
     where g.status = 'pending' and g.dispatch_until is not null and ${submissionClaimOver}
     order by g.created_at limit :limit`,
    { limit },
  );
  return rows;
}
