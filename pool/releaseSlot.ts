import type { Knex } from 'knex';

/**
 * Gives back whatever slot the generation holds; a no-op when it holds none (a late or duplicate
 * release, or a lease that ran out and went to another generation). Answers how many were released.
 */
export async function releaseSlot(db: Knex, generationId: string): Promise<number> {
  return db('provider_slots').where({ generation_id: generationId }).update({ generation_id: null, lease_expires_at: null });
}

/**
 * Gives back one lease only if it is still this generation's: used when a submission did not
 * happen, so that a slot the generation holds elsewhere (a duplicate submission after a stalled
 * worker) is not released with it.
 */
export async function releaseLease(db: Knex, lease: { generationId: string; accountId: number; slotNo: number }): Promise<number> {
  return db('provider_slots')
    .where({ account_id: lease.accountId, slot_no: lease.slotNo, generation_id: lease.generationId })
    .update({ generation_id: null, lease_expires_at: null });
}
