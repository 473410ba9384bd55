import type { Knex } from 'knex';

/**
 * pending (claimed) -> pending (waiting): the submission did not happen (provider busy or
 * unreachable, no slot after all), so no task exists for it. Guarded by the status; the caller
 * releases the slot and puts the ticket back in line in the same transaction.
 */
export async function releaseSubmissionClaim(trx: Knex.Transaction, generationId: string): Promise<boolean> {
  const released = await trx.raw<{ rowCount: number }>(
    `update generations set dispatch_until = null, claimed_by = null, submission_account_id = null
     where id = :generationId and status = 'pending' and dispatch_until is not null`,
    { generationId },
  );
  return released.rowCount === 1;
}
