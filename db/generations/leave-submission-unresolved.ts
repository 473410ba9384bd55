import type { Knex } from 'knex';

/**
 * pending (submitting) -> pending (submission unresolved): the provider may have accepted the task
 * but its answer never came (no answer in time, a reset connection, a 5xx). The claim ends now, the
 * slot and the record of the attempt stay, and the sweeps look the task up by its client reference:
 * adopted if the provider has it, back in line if not. Guarded by the status and the claim.
 */
export async function leaveSubmissionUnresolved(db: Knex, generationId: string, processId: string): Promise<boolean> {
  const left = await db.raw<{ rowCount: number }>(
    `update generations set dispatch_until = now(), claimed_by = null
     where id = :generationId and status = 'pending' and claimed_by = :processId and submission_account_id is not null`,
    { generationId, processId },
  );
  return left.rowCount === 1;
}
