import type { Job } from 'pg-boss';
import { claimPreview, type StoredResult } from '../../db/generations/claim-preview';
import type { StoredGenerationPreview } from '../../db/generations/model';
import { succeedGeneration } from '../../db/generations/succeed-generation';
import { earningTerms } from '../../db/user-effects/record-earning';
import { bossIn, type QueuePayloads } from '../../db/queues';
import { isUnreachable } from '../../db/unreachable';
import { buildGenerationPreview } from '../../media/generation-preview';
import { previewThumbKey } from '../../media/object-keys';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';

/** Without a NOTIFY, the consumer looks for jobs this often (retried jobs, missed notifications). */
const idleWaitMs = 500;

/**
 * The preview of a stored result (`generation-media` job, `media` role): the WebP thumb (for a video
 * the frame at 0.5 s, which is also the poster) at `previews/<user_id>/<generation_id>/thumb.webp`,
 * then processing -> succeeded. A result that cannot be read as an image or video leaves `preview`
 * null and the generation still succeeds (the contract); an unreachable database or object store
 * fails the job, which pg-boss tries again. The claim names this process, so if it dies mid-preview
 * the worker sweeps hand the job to another media process at once. A duplicate or late job changes
 * nothing.
 */
async function makePreview(services: Services, job: Job<QueuePayloads['generation-media']>): Promise<'completed' | void> {
  const { db, boss, processSession } = services;
  const row = await claimPreview(db, job.data.generationId, processSession.id);
  // A duplicate or late job: nothing to do, the consumer completes it.
  if (!row) return;
  // A text answer has no file and no preview.
  const preview = row.result_key === null ? null : await copyPreview(services, row, row.result_key);
  await db.transaction(async (trx) => {
    await succeedGeneration(trx, boss, { generationId: row.id, preview }, earningTerms(services.config));
    // The job ends with the transition: a crash in between leaves both undone, and the retry is a no-op.
    await boss.complete('generation-media', job.id, null, { db: bossIn(trx) });
  });
  return 'completed';
}

/** The preview copy of a stored result file, or null when the copy failed (the generation succeeds without one). */
async function copyPreview(services: Services, row: StoredResult, resultKey: string): Promise<StoredGenerationPreview | null> {
  const { storage, log } = services;
  try {
    const built = await buildGenerationPreview(await storage.get(resultKey), row.output_type === 'video' ? 'video' : 'image');
    const thumbKey = previewThumbKey(row.user_id, row.id);
    await storage.put(thumbKey, built.thumb, 'image/webp');
    return { thumb_key: thumbKey, poster_key: built.posterIsThumb ? thumbKey : null, width: built.width, height: built.height, blurhash: built.blurhash };
  } catch (error) {
    if (isUnreachable(error)) throw error;
    log.warn({ err: error, generationId: row.id }, 'preview copy failed; the generation succeeds without one');
    return null;
  }
}

/**
 * The `media` role's consumer of `generation-media`: up to MEDIA_CONCURRENCY previews at once,
 * fetched again as soon as one is done, and woken at once by the NOTIFY of a stored result.
 */
export async function startPreviewConsumer(services: Services): Promise<RunningPart> {
  return startQueueConsumer(services, {
    queue: 'generation-media',
    concurrency: services.config.generations.mediaConcurrency,
    idleMs: idleWaitMs,
    wakeOn: [{ channel: 'generation_media' }],
    handle: (job) => makePreview(services, job),
  });
}
