import { randomUUID } from 'node:crypto';
import pLimit from 'p-limit';
import type { JobWithMetadata } from 'pg-boss';
import { failGeneration } from '../../db/generations/fail-generation';
import { findDeadPreviewClaims } from '../../db/generations/find-dead-preview-claims';
import { findOverduePending } from '../../db/generations/find-overdue-pending';
import { findStalledDispatches, type StalledDispatch } from '../../db/generations/find-stalled-dispatches';
import { findAwaitingPreviews, type AwaitingPreview } from '../../db/generations/find-awaiting-previews';
import { markProcessing } from '../../db/generations/mark-processing';
import { pollPacing } from '../../db/generations/schedule-poll';
import { recordSubmitJob } from '../../db/generations/record-submit-job';
import { releaseDeadPollClaims } from '../../db/generations/release-dead-poll-claims';
import { releasePreviewClaim } from '../../db/generations/release-preview-claim';
import { finishSubmitJob, returnSubmitJob, sendSubmitJob } from '../../db/generations/submit-ticket';
import { succeedGeneration } from '../../db/generations/succeed-generation';
import { earningTerms } from '../../db/user-effects/record-earning';
import { takeBackStalledDispatch } from '../../db/generations/take-back-stalled-dispatch';
import { bossIn } from '../../db/queues';
import type { AccountCircuits } from '../../pool/account-circuits';
import { keyFingerprint, type AccountKeys } from '../../pool/accounts';
import { leaseSlots } from '../../db/pool/lease-slots';
import type { ProviderAccount, TaskLookup } from '../../clients/providers/adapter';
import type { ProviderAdapters } from '../../clients/providers/registry';
import { releaseGenerationSlot } from '../../db/pool/release-generation-slot';
import { renewSlotLease } from '../../db/pool/renew-slot-lease';
import type { Services } from '../../services';

/**
 * The pipeline's safety nets, run beside the dispatcher's rounds in every worker. Each one is a guarded
 * statement per generation, so several workers running them at once change nothing twice. A claim
 * is over when it ran out, or at once when the process that holds it is dead (its session is gone,
 * `db/process-session.ts`).
 */
const batch = 100;
/** Provider lookups of unresolved submissions made at once by one sweep. */
const lookupsAtOnce = 8;
/**
 * A task is taken to be absent at the provider only when two lookups this far apart found none: a
 * submission still on its way (sent by a process that just died, or held up by a provider that
 * stalled) is found by the second one.
 */
const absenceConfirmMs = 3000;

/** What the sweeps need of the provider: recovery looks submissions up by their client reference. */
export interface SweepProvider {
  adapters: ProviderAdapters;
  keys: AccountKeys;
  circuits: AccountCircuits;
}

/** pending longer than PENDING_TIMEOUT_S (never got a slot) -> failed `pool_timeout`, refunded. */
async function expirePending(services: Services): Promise<number> {
  const { db, boss, config } = services;
  let failed = 0;
  for (const { id, named } of await findOverduePending(db, config.generations.pendingTimeoutS, batch)) {
    if (await db.transaction((trx) => failGeneration(trx, boss, { generationId: id, from: named ? 'abandoned' : 'unclaimed', errorCode: 'pool_timeout' }))) failed += 1;
  }
  return failed;
}

/** When this process first found no task for an unresolved submission, by generation id. */
export type AbsentSince = Map<string, number>;

export interface Recovery {
  /** Generations waiting again at their old place in line, their slots released. */
  returned: number;
  /** Submissions whose task was found at the provider: the generation runs on it. */
  adopted: number;
}

/**
 * A submission claim that is over: a worker died or stalled between taking a generation and
 * recording its submission, or got no answer from the provider. When nothing was sent, or the
 * provider has no task under the generation's client reference (twice, `absenceConfirmMs` apart),
 * the generation waits again at its old place in line and its slot is released. When the provider
 * has one, the generation adopts it (`processing`, on the slot it held): nothing is submitted
 * twice. Until the provider answers the lookup, the slot is kept and the next sweep asks again.
 */
async function recoverStalledDispatches(services: Services, provider: SweepProvider, absentSince: AbsentSince = new Map()): Promise<Recovery> {
  const recovery: Recovery = { returned: 0, adopted: 0 };
  const lookups = pLimit(lookupsAtOnce);
  await Promise.all((await findStalledDispatches(services.db, batch)).map((stalled) => lookups(async () => {
    const outcome = stalled.submission_account_id === null ? 'absent' : await resolveSubmission(services, provider, stalled, absentSince);
    if (outcome === 'absent' && (await takeBack(services, stalled.id))) recovery.returned += 1;
    if (outcome === 'adopted') recovery.adopted += 1;
    if (outcome !== 'unknown') absentSince.delete(stalled.id);
  })));
  for (const [id, since] of absentSince) if (Date.now() - since > 10 * absenceConfirmMs) absentSince.delete(id);
  return recovery;
}

async function resolveSubmission(services: Services, provider: SweepProvider, stalled: StalledDispatch, absentSince: AbsentSince): Promise<'adopted' | 'absent' | 'unknown'> {
  const { db, log, config } = services;
  const settings = config.generations;
  const accountId = stalled.submission_account_id!;
  const account = await provider.keys.keyOf(accountId);
  // A worker configured with that account's key asks; if none is left, pending expiry ends the wait.
  if (!account) return 'unknown';
  // The provider's signed webhook already named the task: nothing to ask (fal could not be asked).
  const lookup = stalled.early_callback_task_id !== null
    ? { kind: 'found' as const, taskId: stalled.early_callback_task_id }
    : await lookUp(provider, stalled, account);
  if (lookup === null) {
    // An account the provider does not answer is looked up only as its circuit's probe; the task
    // may be running meanwhile, so its slot stays leased.
    await renewSlotLease(db, stalled.id, settings.slotLeaseS);
    return 'unknown';
  }
  if (lookup.kind === 'absent') {
    const since = absentSince.get(stalled.id) ?? Date.now();
    absentSince.set(stalled.id, since);
    if (Date.now() - since >= absenceConfirmMs) return 'absent';
  }
  if (lookup.kind !== 'found') {
    // A provider that does not answer may hold the submission too: its absence counts again from its next answer.
    if (lookup.kind === 'unavailable') absentSince.delete(stalled.id);
    // The task may be running: its slot stays leased until the provider answers.
    await renewSlotLease(db, stalled.id, settings.slotLeaseS);
    return 'unknown';
  }
  const adopted = await db.transaction(async (trx) => {
    const ticket = await markProcessing(trx, { generationId: stalled.id, accountId, taskId: lookup.taskId }, pollPacing(settings));
    if (!ticket) return false;
    if (ticket.submit_job_id) await finishSubmitJob(services.boss, trx, ticket.provider_kind, ticket.submit_job_id);
    // The task holds a slot of its account at the provider: the generation keeps (or takes) one there.
    if (!(await renewSlotLease(trx, stalled.id, settings.slotLeaseS))) await leaseSlots(trx, [stalled.id], settings.slotLeaseS, [keyFingerprint(account.apiKey)]);
    return true;
  });
  if (adopted) log.info({ generationId: stalled.id, taskId: lookup.taskId }, 'unrecorded submission found at the provider; adopted');
  return adopted ? 'adopted' : 'unknown';
}

/**
 * The provider's answer about an unresolved submission, counted for or against its account; null
 * when its circuit is open and this is not its probe. A provider that cannot look tasks up
 * (`unknowable`) counts neither way.
 */
async function lookUp(provider: SweepProvider, stalled: StalledDispatch, account: ProviderAccount): Promise<TaskLookup | null> {
  const accountId = stalled.submission_account_id!;
  if (stalled.circuit_open && !(await provider.circuits.mayCall(accountId)).go) return null;
  const lookup = await provider.adapters.of(account.kind).findTask(account, stalled.id);
  if (lookup.kind === 'unavailable') await provider.circuits.failed(accountId);
  else if (lookup.kind !== 'unknowable') await provider.circuits.answered(accountId);
  return lookup;
}

async function takeBack(services: Services, generationId: string): Promise<boolean> {
  const { db, boss } = services;
  return db.transaction(async (trx) => {
    const taken = await takeBackStalledDispatch(trx, generationId);
    if (!taken) return false;
    await releaseGenerationSlot(trx, generationId);
    if (!taken.submitJobId || !(await returnSubmitJob(boss, trx, taken.kind, taken.submitJobId))) {
      // The ticket itself is gone (finished, or deleted beyond pg-boss's retention): a new one, same line.
      await recordSubmitJob(trx, generationId, await sendSubmitJob(boss, trx, taken.kind, generationId, randomUUID()));
    }
    return true;
  });
}

/**
 * A media process that died mid-preview (its session is gone) or fell silent (its job's heartbeat
 * stopped): the claim ends and the `generation-media` job is failed now, not when it expires, so
 * another media process takes it after the queue's retry delay.
 */
export async function retryDeadPreviews(services: Services, awaiting?: AwaitingPreviews): Promise<number> {
  const { db, boss } = services;
  let retried = 0;
  for (const dead of await findDeadPreviewClaims(db, batch)) {
    const released = await db.transaction(async (trx) => {
      if (!(await releasePreviewClaim(trx, dead.id, dead.claimed_by))) return false;
      const job = dead.media_job_id ? await boss.getJobById('generation-media', dead.media_job_id, { db: bossIn(trx) }) : null;
      if (job?.state === 'active') await boss.fail('generation-media', job.id, { message: 'the media process building it died' }, { db: bossIn(trx) });
      return true;
    });
    if (released) retried += 1;
  }
  // A job fetched but nobody touched within its heartbeat: its media process died or hangs, or never
  // got the answer to its fetch. pg-boss's own supervision fails them too, but only once a minute.
  const now = Date.now();
  const silent = (awaiting ?? await previewJobs(services)).flatMap(({ job }) => (
    job?.state === 'active' && job.heartbeatSeconds && job.heartbeatOn && job.heartbeatOn.getTime() + job.heartbeatSeconds * 1000 < now ? [job.id] : []
  ));
  if (silent.length) await boss.fail('generation-media', silent, { message: 'nobody touched it within its heartbeat' });
  return retried + silent.length;
}

/** The stored results awaiting their preview, oldest first, each with its `generation-media` job as pg-boss answers it (null: none, or gone). */
type AwaitingPreviews = (AwaitingPreview & { job: JobWithMetadata | null })[];

async function previewJobs({ db, boss }: Services): Promise<AwaitingPreviews> {
  return Promise.all((await findAwaitingPreviews(db, batch)).map(async (awaiting) => ({
    ...awaiting,
    job: awaiting.media_job_id ? await boss.getJobById('generation-media', awaiting.media_job_id) : null,
  })));
}

/**
 * A stored result whose preview will not come: its job gave up (every try failed, or it is gone), or
 * it has been ready to run for MEDIA_TIMEOUT_S without any media process taking it (the media role
 * is down). The generation succeeds without a preview, as the contract allows for a failed copy. A
 * job being built or waiting for its next try is never given up on. Results stored before the row
 * named its job keep the old rule: stored longer than MEDIA_TIMEOUT_S ago.
 */
export async function finishStuckMedia(services: Services, awaiting?: AwaitingPreviews): Promise<number> {
  const { db, boss, config } = services;
  const timedOut = Date.now() - config.generations.mediaTimeoutS * 1000;
  const stuck = (awaiting ?? await previewJobs(services)).filter(({ media_job_id: jobId, job, result_stored_at: storedAt }) => {
    if (jobId === null) return storedAt.getTime() < timedOut;
    if (job === null) return true;
    if (job.state === 'created' || job.state === 'retry') return job.startAfter.getTime() < timedOut;
    return job.state !== 'active';
  });
  let finished = 0;
  for (const { id } of stuck) {
    if (await db.transaction((trx) => succeedGeneration(trx, boss, { generationId: id, preview: null }, earningTerms(config)))) finished += 1;
  }
  return finished;
}

/** Runs every sweep at most once per `intervalMs` in this process. */
export function sweeper(
  services: Services,
  provider: SweepProvider,
  intervalMs: number,
  wake: { onSlotsReleased: () => void; onSubmitted: () => void },
): () => Promise<void> {
  let next = 0;
  const absentSince: AbsentSince = new Map();
  return async () => {
    if (Date.now() < next) return;
    next = Date.now() + intervalMs;
    const expired = await expirePending(services);
    const { returned, adopted } = await recoverStalledDispatches(services, provider, absentSince);
    const polls = await releaseDeadPollClaims(services.db);
    const awaitingPreviews = await previewJobs(services);
    const previews = await retryDeadPreviews(services, awaitingPreviews);
    const finished = await finishStuckMedia(services, awaitingPreviews);
    if (expired || returned || adopted || polls || previews || finished) {
      services.log.info({ expired, returned, adopted, deadPollClaims: polls, deadPreviewClaims: previews, finished }, 'generation sweeps');
    }
    if (returned) wake.onSlotsReleased();
    if (adopted || polls) wake.onSubmitted();
  };
}
