import type { Job } from 'pg-boss';
import { claimPreview } from '../../db/generations/claim-preview';
import { succeedGeneration } from '../../db/generations/succeed-generation';
import { earningTerms } from '../../db/user-effects/record-earning';
import { bossIn, type QueuePayloads } from '../../db/queues';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';
import { buildGenerationPreview } from '../../media/generation-preview';
import { storePreview } from './store-result';

/** Without a NOTIFY, the consumer looks for jobs this often (retried jobs, missed notifications). */
const idleWaitMs = 500;

/**
 * The preview of a stored result (`generation-media` job, `media` role): the WebP thumb (for a video
 * the frame at 0.5 s, which is also the poster) at `previews/<user_id>/<generation_id>.webp`,
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
  const resultKey = row.result_key;
  const preview = resultKey === null ? null : await storePreview(services, row, async (storeThumb) => buildGenerationPreview(await services.storage.get(resultKey), row.output_type === 'video' ? 'video' : 'image', storeThumb));
  await db.transaction(async (trx) => {
    await succeedGeneration(trx, boss, { generationId: row.id, preview }, earningTerms(services.config));
    // The job ends with the transition: a crash in between leaves both undone, and the retry is a no-op.
    await boss.complete('generation-media', job.id, null, { db: bossIn(trx) });
  });
  return 'completed';
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
