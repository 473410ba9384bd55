import type { Knex } from 'knex';

/** Keeps the generation's slot for another `leaseS` (called at every poll); nothing when it holds none. */
export async function renewSlotLease(db: Knex, generationId: string, leaseS: number): Promise<number> {
  const renewed = await db.raw<{ rowCount: number }>(
    "update provider_slots set lease_expires_at = now() + :leaseS * interval '1 second' where generation_id = :generationId",
    { generationId, leaseS },
  );
  return renewed.rowCount;
}
