import type { Knex } from 'knex';
import type { GenerationRow } from './model';

/** `result_key` is null for a text answer, which has no file to preview. */
export type StoredResult = Pick<GenerationRow, 'id' | 'user_id' | 'output_type' | 'result_key'>;

/**
 * processing (result stored) -> processing (preview being built by `processId`): a media process
 * takes the preview. The claim names the process, so that if it dies mid-preview the sweeps hand
 * its job to another one at once. Null when there is nothing to build (a duplicate or late job).
 */
export async function claimPreview(db: Knex, generationId: string, processId: string): Promise<StoredResult | null> {
  const { rows } = await db.raw<{ rows: StoredResult[] }>(
    `update generations set claimed_by = :processId
     where id = :generationId and status = 'processing' and result_stored_at is not null
     returning id, user_id, output_type, result_key`,
    { generationId, processId },
  );
  return rows[0] ?? null;
}
