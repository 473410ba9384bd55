import type { Knex } from 'knex';
import type { GenerationStatus } from './model';

/** The generation's status, or null when there is no such generation. */
export async function generationStatus(db: Knex, generationId: string): Promise<GenerationStatus | null> {
  const { rows } = await db.raw<{ rows: { status: GenerationStatus }[] }>('select status from generations where id = ?', [generationId]);
  return rows[0]?.status ?? null;
}
