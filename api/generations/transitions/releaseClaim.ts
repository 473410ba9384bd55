import type { Knex } from 'knex';

/**
 * pending (claimed) -> pending (waiting): the submission did not happen (provider busy or
 * unreachable, no slot after all). Guarded by the status; the caller releases the slot and puts the
 * ticket back in line in the same transaction.
 */
export async function releaseClaim(trx: Knex.Transaction, generationId: string): Promise<boolean> {
  const released = await trx('generations')
    .where({ id: generationId, status: 'pending' })
    .whereNotNull('dispatch_until')
    .update({ dispatch_until: null });
  return released === 1;
}
