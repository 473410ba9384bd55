import type { Knex } from 'knex';
import type { ModerationLease } from './lease-moderation-slot';

/** Gives back a moderation's slot only while it is still this user effect's (a lapsed lease may be another's now). */
export async function releaseModerationSlot(db: Knex, lease: ModerationLease): Promise<number> {
  const released = await db.raw<{ rowCount: number }>(
    `update provider_slots set user_effect_id = null, lease_expires_at = null
     where account_id = :accountId and slot_no = :slotNo and user_effect_id = :userEffectId`,
    { ...lease },
  );
  return released.rowCount;
}
