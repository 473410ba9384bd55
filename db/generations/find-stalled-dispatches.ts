import type { Knex } from 'knex';

/** A submission claim is over when it ran out, or its process is dead. Shared with `take-back-stalled-dispatch.ts`. */
export const submissionClaimOver = '(dispatch_until < now() or (claimed_by is not null and not process_is_alive(claimed_by)))';

export interface StalledDispatch {
  id: string;
  /** The account a submission went to whose answer was never recorded; null when none was sent. */
  submission_account_id: number | null;
}

/**
 * Up to `limit` pending generations whose submission claim is over, oldest first: it ran out (a
 * worker stalled, or left the submission unresolved), or its process is dead (`process_is_alive`).
 */
export async function findStalledDispatches(db: Knex, limit: number): Promise<StalledDispatch[]> {
  const { rows } = await db.raw<{ rows: StalledDispatch[] }>(
    `select id, submission_account_id from generations
     where status = 'pending' and dispatch_until is not null and ${submissionClaimOver}
     order by created_at limit :limit`,
    { limit },
  );
  return rows;
}
