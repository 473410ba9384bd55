import type { Knex } from 'knex';

/**
 * The slots held by the generations `source` names (its `id`) given back, as an UPDATE for a
 * transition's own statement (`succeed-generation.ts`) or for `releaseGenerationSlot`.
 */
export function releaseSlotsOf(source: string): string {
  return `update provider_slots s set generation_id = null, lease_expires_at = null
    from ${source} released where s.generation_id = released.id`;
}

/**
 * Gives back whatever slot the generation holds; a no-op when it holds none (a late or duplicate
 * release, or a lease that ran out and went to another generation). Answers how many were released.
 */
export async function releaseGenerationSlot(db: Knex, generationId: string): Promise<number> {
  const released = await db.raw<{ rowCount: number }>(
    `with generation as (select :generationId::uuid as id) ${releaseSlotsOf('generation')}`,
    { generationId },
  );
  return released.rowCount;
}
