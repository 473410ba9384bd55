import type { Job } from 'pg-boss';
import { buildGenerationPreview } from '../../media/generation-preview';
import type { RunningPart, Services } from '../../services';
import { findStoredResult } from '../../db/generations/find-stored-result';
import type { StoredGenerationPreview } from '../../db/generations/model';
import { succeedGeneration } from '../../db/generations/succeed-generation';
import { bossIn, type QueuePayloads } from '../../db/queues';
import { Wakeup } from '../runtime/wakeup';
import { previewThumbKey } from '../../media/object-keys';

/** Without a NOTIFY, the media loop looks for jobs this often (retried jobs, missed notifications). */
const idleWaitMs = 500;

/**
 * The preview of a stored result (`generation-media` job, `media` role): the WebP thumb (for a video
 * the frame at 0.5 s, which is also the poster) at `previews/<user_id>/<generation_id>/thumb.webp`,
 * then processing -> succeeded. A copy that fails leaves `preview` null and the generation still
 * succeeds (contract B); a duplicate or late job changes nothing.
 */
export async function makePreview(services: Services, job: QueuePayloads['generation-media'], jobId?: string): Promise<void> {
  const { db, boss, storage, log } = services;
  const row = await findStoredResult(db, job.generationId);
  if (!row) {
    if (jobId) await boss.complete('generation-media', jobId);
    return;
  }
  let preview: StoredGenerationPreview | null = null;
  try {
    const built = await buildGenerationPreview(await storage.get(row.result_key), row.output_type);
    const thumbKey = previewThumbKey(row.user_id, row.id);
    await storage.put(thumbKey, built.thumb, 'image/webp');
    preview = { thumb_key: thumbKey, poster_key: built.posterIsThumb ? thumbKey : null, width: built.width, height: built.height, blurhash: built.blurhash };
  } catch (error) {
    log.warn({ err: error, generationId: row.id }, 'preview copy failed; the generation succeeds without one');
  }
  await db.transaction(async (trx) => {
    await succeedGeneration(trx, boss, { generationId: row.id, preview });
    // The job ends with the transition: a crash in between leaves both undone, and the retry is a no-op.
    if (jobId) await boss.complete('generation-media', jobId, null, { db: bossIn(trx) });
  });
}

/**
 * The media loop: up to MEDIA_CONCURRENCY previews at once, fetched from `generation-media` as room
 * frees. pg-boss's own work() loop fetches at most one batch per polling interval (0.5 s), which
 * would cap previews at a few per second; this loop fetches again as soon as a preview is done, and
 * a NOTIFY from a stored result wakes it at once.
 */
export async function startGenerationMedia(services: Services): Promise<RunningPart> {
  const { boss, log, config } = services;
  const wakeup = new Wakeup();
  const inFlight = new Set<Promise<void>>();
  let stopped = false;

  const handle = async (job: Job<QueuePayloads['generation-media']>) => {
    try {
      await makePreview(services, job.data, job.id);
    } catch (error) {
      log.error({ err: error, generationId: job.data.generationId }, 'preview job failed; it will be retried');
      await boss.fail('generation-media', job.id, { message: (error as Error).message }).catch(() => undefined);
    }
  };

  const loop = (async () => {
    while (!stopped) {
      let wait = idleWaitMs;
      try {
        const room = config.generations.mediaConcurrency - inFlight.size;
        if (room > 0) {
          const jobs = await boss.fetch<QueuePayloads['generation-media']>('generation-media', { batchSize: room });
          for (const job of jobs) {
            const work = handle(job);
            inFlight.add(work);
            void work.finally(() => {
              inFlight.delete(work);
              wakeup.wake();
            });
          }
          if (jobs.length === room) wait = 0;
        }
      } catch (error) {
        log.error({ err: error }, 'media round failed');
      }
      await wakeup.wait(wait);
    }
  })();

  const wake = () => wakeup.wake();
  const unsubscribe = await services.listenHub.subscribe('generation_media', null, { notify: wake, resync: wake });
  return {
    stop: async () => {
      stopped = true;
      wakeup.wake();
      unsubscribe();
      await loop;
      await Promise.allSettled([...inFlight]);
    },
  };
}
