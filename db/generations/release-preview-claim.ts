import type { Knex } from 'knex';

/**
 * processing (preview claimed by `processId`) -> processing (preview to make): the claim of a dead
 * media process ends; the caller fails its job in the same transaction, so another media process
 * takes it. Guarded by the claim, so of several sweeps only one does it.
 */
export async function releasePreviewClaim(trx: Knex.Transaction, generationId: string, processId: string): Promise<boolean> {
  const released = await trx.raw<{ rowCount: number }>(
    `update generations set claimed_by = null
     where id = :generationId and status = 'processing' and result_stored_at is not null and claimed_by = :processId`,
    { generationId, processId },
  );
  return released.rowCount === 1;
}
