import type { Knex } from 'knex';
import type { Lease } from './lease-slots';

/**
 * Gives back one lease only if it is still this generation's: used when a submission did not
 * happen, so that a slot the generation holds elsewhere (a duplicate submission after a stalled
 * worker) is not released with it.
 */
export async function releaseSlotLease(db: Knex, lease: Lease): Promise<number> {
  const released = await db.raw<{ rowCount: number }>(
    `update provider_slots set generation_id = null, lease_expires_at = null
     where account_id = :accountId and slot_no = :slotNo and generation_id = :generationId`,
    { ...lease },
  );
  return released.rowCount;
}
