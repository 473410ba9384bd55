import type { Knex } from 'knex';
import type { ModerationLease } from './lease-moderation-slot';

/** Keeps a moderation's slot for another `leaseS` while it polls; 0 when the lease was lost meanwhile. */
export async function renewModerationSlot(db: Knex, lease: ModerationLease, leaseS: number): Promise<number> {
  const renewed = await db.raw<{ rowCount: number }>(
    `update provider_slots set lease_expires_at = now() + :leaseS * interval '1 second'
     where account_id = :accountId and slot_no = :slotNo and user_effect_id = :userEffectId`,
    { ...lease, leaseS },
  );
  return renewed.rowCount;
}
