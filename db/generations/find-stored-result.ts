import type { Knex } from 'knex';
import type { GenerationRow } from './model';

/** `result_key` is null for a text answer, which has no file to preview. */
export type StoredResult = Pick<GenerationRow, 'id' | 'user_id' | 'output_type' | 'result_key'>;

/** A `processing` generation whose result is stored and waits for its preview; null otherwise. */
export async function findStoredResult(db: Knex, generationId: string): Promise<StoredResult | null> {
  const { rows } = await db.raw<{ rows: StoredResult[] }>(
    `select id, user_id, output_type, result_key from generations
     where id = ? and status = 'processing' and (result_key is not null or result_text is not null)`,
    [generationId],
  );
  return rows[0] ?? null;
}
