import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { releaseGenerationSlot } from '../pool/release-generation-slot';
import { notify } from '../channels';
import { enqueue } from '../queues';

/** A result file in our storage, or the answer of a text task (kept on the row, no file). */
export type StoredResultOf = { key: string; contentType: string } | { text: string };

/**
 * What recording a stored result sets and the guard it needs, shared by the two transitions that
 * record one (`markResultStored`, `succeedWithResult`): the result, the end of polling and of the
 * poll claim; only on a `processing` generation whose result is not stored yet (the first wins).
 * Its bindings are `storedResultBindings`'.
 */
export const RESULT_STORED_SET = `result_key = :key, result_content_type = :contentType, result_text = :text, result_stored_at = now(),
       next_poll_at = null, claimed_by = null`;
export const RESULT_NOT_STORED_YET = "id = :generationId and status = 'processing' and result_stored_at is null";

export function storedResultBindings(result: { generationId: string } & StoredResultOf): Record<string, string | null> {
  const file = 'key' in result ? result : null;
  return { generationId: result.generationId, key: file?.key ?? null, contentType: file?.contentType ?? null, text: 'text' in result ? result.text : null };
}

/**
 * processing (provider running) -> processing (result stored, preview to make). Not a status change
 * for clients, so no status event. The preview is made by the `media` role: a video's (an image's
 * or a text answer's success needs no job: `succeed-with-result.ts`).
 * The poll loop gave the slot back when the provider said done; releasing it here too covers a
 * worker that stored a result another one had polled. The `generation-media` job carries the
 * generation's id, and the row names it. Guarded: the first stored result wins.
 */
export async function markResultStored(
  trx: Knex.Transaction,
  boss: PgBoss,
  result: { generationId: string } & StoredResultOf,
): Promise<boolean> {
  const stored = await trx.raw<{ rowCount: number }>(
    `update generations set ${RESULT_STORED_SET}, media_job_id = :generationId where ${RESULT_NOT_STORED_YET}`,
    storedResultBindings(result),
  );
  if (stored.rowCount !== 1) return false;
  await releaseGenerationSlot(trx, result.generationId);
  await enqueue(boss, trx, 'generation-media', { generationId: result.generationId }, { id: result.generationId });
  // Wakes the media workers now rather than at their next look for jobs.
  await notify(trx, 'generation_media', { id: result.generationId });
  return true;
}
