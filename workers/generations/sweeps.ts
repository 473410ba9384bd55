import { randomUUID } from 'node:crypto';
import type { Services } from '../../api/services';
import { markFailed } from '../../api/generations/transitions/markFailed';
import { markSucceeded } from '../../api/generations/transitions/markSucceeded';
import { returnSubmitJob, sendSubmitJob } from '../../api/generations/submit-job';
import { releaseSlot } from '../../pool/releaseSlot';

/**
 * The pipeline's safety nets, run between dispatcher rounds in every worker. Each one is a guarded
 * statement per generation, so several workers running them at once change nothing twice.
 */
const batch = 100;

/** pending longer than PENDING_TIMEOUT_S (never got a slot) -> failed `pool_timeout`, refunded. */
export async function expirePending(services: Services): Promise<number> {
  const { db, boss, config } = services;
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    `select id from generations
     where status = 'pending' and created_at < now() - :timeoutS * interval '1 second'
       and (dispatch_until is null or dispatch_until < now())
     order by created_at limit :batch`,
    { timeoutS: config.generations.pendingTimeoutS, batch },
  );
  let failed = 0;
  for (const { id } of rows) {
    if (await db.transaction((trx) => markFailed(trx, boss, { generationId: id, from: 'pending', errorCode: 'pool_timeout' }))) failed += 1;
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
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    "select id from generations where status = 'pending' and dispatch_until < now() order by created_at limit :batch",
    { batch },
  );
  let recovered = 0;
  for (const { id } of rows) {
    const done = await db.transaction(async (trx) => {
      const [row]: { submit_job_id: string | null }[] = await trx('generations')
        .where({ id, status: 'pending' })
        .andWhere('dispatch_until', '<', trx.fn.now())
        .update({ dispatch_until: null })
        .returning(['submit_job_id']);
      if (!row) return false;
      await releaseSlot(trx, id);
      if (!row.submit_job_id || !(await returnSubmitJob(boss, trx, row.submit_job_id))) {
        // The ticket itself is gone (archived, or failed beyond pg-boss's reach): a new one, same line.
        const jobId = await sendSubmitJob(boss, trx, id, randomUUID());
        await trx('generations').where({ id }).update({ submit_job_id: jobId });
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
  const { rows } = await db.raw<{ rows: { id: string }[] }>(
    `select id from generations
     where status = 'processing' and result_key is not null and result_stored_at < now() - :timeoutS * interval '1 second'
     order by result_stored_at limit :batch`,
    { timeoutS: config.generations.mediaTimeoutS, batch },
  );
  let finished = 0;
  for (const { id } of rows) {
    if (await db.transaction((trx) => markSucceeded(trx, boss, { generationId: id, preview: null }))) finished += 1;
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
