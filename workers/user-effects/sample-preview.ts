import { createHash } from 'node:crypto';
import type { Job } from 'pg-boss';
import { bossIn, type QueuePayloads } from '../../db/queues';
import { approveUserEffect } from '../../db/user-effects/approve-user-effect';
import { keepPrivate } from '../../db/user-effects/keep-private';
import type { StoredUserEffectPreview, UserEffectRow } from '../../db/user-effects/model';
import { findUserEffect } from '../../db/user-effects/find-user-effect';
import { recordPreview } from '../../db/user-effects/record-preview';
import { rejectUserEffect } from '../../db/user-effects/reject-user-effect';
import { buildEffectPreview, storePreviewFiles } from '../../media/effect-preview';
import { imageFileType } from '../../media/file-types';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';

const idleWaitMs = 1000;

/**
 * The media role's part of a moderation round (`user-effect-media`): the preview of the sample
 * photo is built and stored (poster as uploaded, WebP thumb, card and full under a folder named by
 * the photo's hash), and only then, in the transaction that completes the job, the status moves on
 * to the verdict: `approved` (public), `private` (private) or `rejected`. A sample that is no photo
 * the copies can be made of has no preview and is rejected (`bad_sample`) whatever the model said.
 * A late or duplicate job changes nothing.
 */
async function finishRound(services: Services, job: Job<QueuePayloads['user-effect-media']>): Promise<'completed' | void> {
  const { db, boss, config } = services;
  const { userEffectId, round } = job.data;
  const row = await findUserEffect(db, userEffectId);
  if (!row || row.status !== 'processing' || row.moderation_round !== round || row.verdict === null) return;
  const built = row.preview ? null : await buildSamplePreview(services, row);
  await db.transaction(async (trx) => {
    if (built) await recordPreview(trx, { userEffectId, round, ...built });
    const target = { userEffectId, round };
    if (row.verdict === 'rejected' || !(row.preview ?? built)) await rejectUserEffect(trx, target);
    else if (row.visibility === 'public') await approveUserEffect(trx, target, config.marketplace.userEffectRuns);
    else await keepPrivate(trx, target, config.marketplace.userEffectRuns);
    await boss.complete('user-effect-media', job.id, null, { db: bossIn(trx) });
  });
  return 'completed';
}

/** The sample's poster and copies, or null when the sample is no photo the copies can be made of. */
async function buildSamplePreview(services: Services, row: UserEffectRow): Promise<{ posterKey: string; preview: StoredUserEffectPreview } | null> {
  const { storage, log } = services;
  const sample = await storage.get(row.sample_key);
  let type: Awaited<ReturnType<typeof imageFileType>>;
  let built: Awaited<ReturnType<typeof buildEffectPreview>>;
  try {
    type = await imageFileType(sample);
    built = await buildEffectPreview({ poster: sample });
  } catch (error) {
    log.info({ err: error, userEffectId: row.id }, 'the sample is no photo: no preview');
    return null;
  }
  const folder = `user-effects/${row.id}/${createHash('sha256').update(sample).digest('hex').slice(0, 24)}`;
  const posterKey = `${folder}/poster.${type.extension}`;
  await storage.put(posterKey, sample, type.contentType);
  const keys = await storePreviewFiles(storage, folder, built);
  return {
    posterKey,
    preview: {
      thumb: keys.get('thumb')!,
      card: keys.get('card')!,
      full: keys.get('full')!,
      animation: null,
      video: null,
      width: built.width,
      height: built.height,
      blurhash: built.blurhash,
    },
  };
}

/** The `media` role's consumer of `user-effect-media`, woken at once by each recorded verdict. */
export async function startSamplePreviews(services: Services): Promise<RunningPart> {
  return startQueueConsumer(services, {
    queue: 'user-effect-media',
    concurrency: services.config.generations.mediaConcurrency,
    idleMs: idleWaitMs,
    wakeOn: [{ channel: 'user_effect_media' }],
    handle: (job) => finishRound(services, job),
  });
}
