import type { Knex } from 'knex';

/**
 * Soft delete (`POST /v1/generations/{id}/hide`): gone from the list, kept in history. Answers
 * false when the generation is absent or another user's; hiding twice keeps the first time.
 */
export async function hideGeneration(db: Knex, userId: string, generationId: string): Promise<boolean> {
  const { rows } = await db.raw<{ rows: unknown[] }>(
    'update generations set hidden_at = coalesce(hidden_at, now()) where id = :generationId and user_id = :userId returning id',
    { generationId, userId },
  );
  return rows.length === 1;
}
