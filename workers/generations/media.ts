import type { Job } from 'pg-boss';
import { bossIn, queues } from '../../db/boss';
import { buildGenerationPreview } from '../../media/generation-preview';
import type { RunningPart, Services } from '../../api/services';
import { mediaChannel, type GenerationRow, type MediaJobData, type StoredGenerationPreview } from '../../api/generations/model';
import { markSucceeded } from '../../api/generations/transitions/markSucceeded';
import { listenTo } from './listener';
import { Wakeup } from './wakeup';
import { previewThumbKey } from '../../media/object-keys';

/** Without a NOTIFY, the media loop looks for jobs this often (retried jobs, missed notifications). */
const idleWaitMs = 500;

/**
 * The preview of a stored result (`generation-media` job, `media` role): the WebP thumb (for a video
 * the frame at 0.5 s, which is also the poster) at `previews/<user_id>/<generation_id>/thumb.webp`,
 * then processing -> succeeded. A copy that fails leaves `preview` null and the generation still
 * succeeds (contract B); a duplicate or late job changes nothing.
 */
export async function makePreview(services: Services, job: MediaJobData, jobId?: string): Promise<void> {
  const { db, boss, storage, log } = services;
  const row: Pick<GenerationRow, 'id' | 'user_id' | 'output_type' | 'result_key'> | undefined = await db('generations')
    .where({ id: job.generationId, status: 'processing' })
    .whereNotNull('result_key')
    .first('id', 'user_id', 'output_type', 'result_key');
  if (!row) {
    if (jobId) await boss.complete(queues.generationMedia, jobId);
    return;
  }
  let preview: StoredGenerationPreview | null = null;
  try {
    const built = await buildGenerationPreview(await storage.get(row.result_key!), row.output_type);
    const thumbKey = previewThumbKey(row.user_id, row.id);
    await storage.put(thumbKey, built.thumb, 'image/webp');
    preview = { thumb_key: thumbKey, poster_key: built.posterIsThumb ? thumbKey : null, width: built.width, height: built.height, blurhash: built.blurhash };
  } catch (error) {
    log.warn({ err: error, generationId: row.id }, 'preview copy failed; the generation succeeds without one');
  }
  await db.transaction(async (trx) => {
    await markSucceeded(trx, boss, { generationId: row.id, preview });
    // The job ends with the transition: a crash in between leaves both undone, and the retry is a no-op.
    if (jobId) await boss.complete(queues.generationMedia, jobId, null as unknown as object, { db: await bossIn(trx) });
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

  const handle = async (job: Job<MediaJobData>) => {
    try {
      await makePreview(services, job.data, job.id);
    } catch (error) {
      log.error({ err: error, generationId: job.data.generationId }, 'preview job failed; it will be retried');
      await boss.fail(queues.generationMedia, job.id, { message: (error as Error).message }).catch(() => undefined);
    }
  };

  const loop = (async () => {
    while (!stopped) {
      let wait = idleWaitMs;
      try {
        const room = config.generations.mediaConcurrency - inFlight.size;
        if (room > 0) {
          const jobs = await boss.fetch<MediaJobData>(queues.generationMedia, { batchSize: room });
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
  const listener = await listenTo(services.db, { [mediaChannel]: wake }, log, wake);
  return {
    stop: async () => {
      stopped = true;
      wakeup.wake();
      await listener.stop();
      await loop;
      await Promise.allSettled([...inFlight]);
    },
  };
}
