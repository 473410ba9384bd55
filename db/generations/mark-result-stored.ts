import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { releaseGenerationSlot } from '../../pool/release-generation-slot';
import { notify } from '../channels';
import { enqueue } from '../queues';

/**
 * processing (provider running) -> processing (result stored, preview to make). Not a status change
 * for clients, so no status event. The preview is made by the `media` role. The poll loop gave the
 * slot back when the provider said done; releasing it here too covers a worker that stored a result
 * another one had polled. The `generation-media` job carries the generation's id, and the row names
 * it. Guarded: the first stored result wins.
 */
export async function markResultStored(
  trx: Knex.Transaction,
  boss: PgBoss,
  result: { generationId: string; key: string; contentType: string },
): Promise<boolean> {
  const stored = await trx.raw<{ rowCount: number }>(
    `update generations
     set result_key = :key, result_content_type = :contentType, result_stored_at = now(), next_poll_at = null,
       claimed_by = null, media_job_id = :generationId
     where id = :generationId and status = 'processing' and result_key is null`,
    result,
  );
  if (stored.rowCount !== 1) return false;
  await releaseGenerationSlot(trx, result.generationId);
  await enqueue(boss, trx, 'generation-media', { generationId: result.generationId }, { id: result.generationId });
  // Wakes the media workers now rather than at their next look for jobs.
  await notify(trx, 'generation_media', { id: result.generationId });
  return true;
}
