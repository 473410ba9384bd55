import type { Knex } from 'knex';

/**
 * Gives back whatever slot the generation holds; a no-op when it holds none (a late or duplicate
 * release, or a lease that ran out and went to another generation). Answers how many were released.
 */
export async function releaseGenerationSlot(db: Knex, generationId: string): Promise<number> {
  const released = await db.raw<{ rowCount: number }>(
    'update provider_slots set generation_id = null, lease_expires_at = null where generation_id = :generationId',
    { generationId },
  );
  return released.rowCount;
}
