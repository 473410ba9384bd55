import type { Knex } from 'knex';
import type { GenerationInput } from './model';

/** The photos of a generation still waiting with its photos unchecked (neither ahead nor by the API); null for any other (or none). */
export async function uncheckedInputs(db: Knex, generationId: string): Promise<GenerationInput[] | null> {
  const { rows } = await db.raw<{ rows: { inputs: GenerationInput[] }[] }>(
    `select inputs from generations where id = :generationId and status = 'pending' and inputs_checked_at is null and not photo_headers_checked`,
    { generationId },
  );
  return rows[0]?.inputs ?? null;
}
