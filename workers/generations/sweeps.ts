import { randomUUID } from 'node:crypto';
import { failGeneration } from '../../db/generations/fail-generation';
import { findOverduePending } from '../../db/generations/find-overdue-pending';
import { findStalledDispatches } from '../../db/generations/find-stalled-dispatches';
import { findStuckPreviews } from '../../db/generations/find-stuck-previews';
import { recordSubmitJob } from '../../db/generations/record-submit-job';
import { returnSubmitJob, sendSubmitJob } from '../../db/generations/submit-ticket';
import { succeedGeneration } from '../../db/generations/succeed-generation';
import { earningTerms } from '../../db/user-effects/record-earning';
import { takeBackStalledDispatch } from '../../db/generations/take-back-stalled-dispatch';
import { releaseGenerationSlot } from '../../pool/release-generation-slot';
import type { Services } from '../../services';

/**
 * The pipeline's safety nets, run between dispatcher rounds in every worker. Each one is a guarded
 * statement per generation, so several workers running them at once change nothing twice.
 */
const batch = 100;

/** pending longer than PENDING_TIMEOUT_S (never got a slot) -> failed `pool_timeout`, refunded. */
export async function expirePending(services: Services): Promise<number> {
  const { db, boss, config } = services;
  let failed = 0;
  for (const id of await findOverduePending(db, config.generations.pendingTimeoutS, batch)) {
    if (await db.transaction((trx) => failGeneration(trx, boss, { generationId: id, from: 'pending', errorCode: 'pool_timeout' }))) failed += 1;
  }
  return failed;
}

/**
 * A claim past its time is a worker that died (or stalled) between taking a generation and
 * recording its submission: the generation waits again at its old place in line, and the slot it
 * may still hold is released.
 */
export async function recoverStalledDispatches(services: Services): Promise<number> {
  const { db, boss } = services;
  let recovered = 0;
  for (const id of await findStalledDispatches(db, batch)) {
    const done = await db.transaction(async (trx) => {
      const taken = await takeBackStalledDispatch(trx, id);
      if (!taken) return false;
      await releaseGenerationSlot(trx, id);
      if (!taken.submitJobId || !(await returnSubmitJob(boss, trx, taken.submitJobId))) {
        // The ticket itself is gone (archived, or failed beyond pg-boss's reach): a new one, same line.
        await recordSubmitJob(trx, id, await sendSubmitJob(boss, trx, id, randomUUID()));
      }
      return true;
    });
    if (done) recovered += 1;
  }
  return recovered;
}

/**
 * A stored result whose preview never came (the media role was down past MEDIA_TIMEOUT_S, or its
 * job gave up): the generation succeeds without a preview, as the contract allows for a failed copy.
 */
export async function finishStuckMedia(services: Services): Promise<number> {
  const { db, boss, config } = services;
  let finished = 0;
  for (const id of await findStuckPreviews(db, config.generations.mediaTimeoutS, batch)) {
    if (await db.transaction((trx) => succeedGeneration(trx, boss, { generationId: id, preview: null }, earningTerms(config)))) finished += 1;
  }
  return finished;
}

/** Runs every sweep at most once per `intervalMs` in this process. */
export function sweeper(services: Services, intervalMs: number, onSlotsReleased: () => void): () => Promise<void> {
  let next = 0;
  return async () => {
    if (Date.now() < next) return;
    next = Date.now() + intervalMs;
    const expired = await expirePending(services);
    const recovered = await recoverStalledDispatches(services);
    const finished = await finishStuckMedia(services);
    if (expired || recovered || finished) services.log.info({ expired, recovered, finished }, 'generation sweeps');
    if (recovered) onSlotsReleased();
  };
}
