import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { Job } from 'pg-boss';
import { bossIn, type QueuePayloads } from '../../db/queues';
import type { RejectionReason, UserEffectRow } from '../../db/user-effects/model';
import { findUserEffect } from '../../db/user-effects/find-user-effect';
import { recordVerdict } from '../../db/user-effects/record-verdict';
import type { AccountKeys } from '../../pool/accounts';
import { coolDownAccount } from '../../db/pool/cool-down-account';
import { leaseModerationSlot, type ModerationLease } from '../../db/pool/lease-moderation-slot';
import type { ProviderAccount, ProviderAdapter } from '../../clients/providers/adapter';
import type { ProviderAdapters } from '../../clients/providers/registry';
import type { ModelRoute } from '../../common/model-route';
import { moderationRoute } from '../../pool/task-routes';
import { releaseModerationSlot } from '../../db/pool/release-moderation-slot';
import { renewModerationSlot } from '../../db/pool/renew-moderation-slot';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';

/**
 * Moderation of user effects in the worker fleet (docs/mobile.md, "The marketplace of user effects"), one `user-effect-moderation`
 * job per round: a provider slot is leased like any provider task (`pool/lease-moderation-slot.ts`),
 * the provider's moderation model reads the name, description, prompt and sample photo, the slot is
 * given back, and the verdict is recorded with a `user-effect-media` job in the transaction that
 * completes this one (`db/user-effects/record-verdict.ts`). The media role then builds the preview
 * and moves the status. No free slot, a busy account, an unavailable provider or a round past
 * MODERATION_DEADLINE_S fail the job, which pg-boss brings back a few seconds later.
 */
export type Verdict = { verdict: 'approved'; reason: null } | { verdict: 'rejected'; reason: RejectionReason };

/** How long the provider may take to download the sample from its presigned link. */
const sampleLinkTtlS = 600;
const pollFirstMs = 100;
const pollLongestMs = 2000;
const idleWaitMs = 1000;

class RoundNotDone extends Error {}

/** What the moderation model reads: the texts a user wrote, one per line. */
function moderationText(row: Pick<UserEffectRow, 'name' | 'description' | 'prompt'>): string {
  return [row.name, row.description, row.prompt].join('\n');
}

/**
 * The model's answer `{"verdict": "approved"}` or `{"verdict": "rejected", "reason": ...}`; anything
 * else is no answer. Language models often wrap JSON in a Markdown code fence: it is taken off.
 */
export function parseVerdict(text: string): Verdict | null {
  let answer: unknown;
  try {
    answer = JSON.parse(text.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/i, '$1'));
  } catch {
    return null;
  }
  const { verdict, reason } = (answer ?? {}) as { verdict?: unknown; reason?: unknown };
  if (verdict === 'approved') return { verdict, reason: null };
  if (verdict === 'rejected' && (reason === 'content_policy' || reason === 'bad_sample')) return { verdict, reason };
  return null;
}

async function moderateRound(
  services: Services,
  provider: { adapters: ProviderAdapters; keys: AccountKeys },
  signal: AbortSignal,
  job: Job<QueuePayloads['user-effect-moderation']>,
): Promise<'completed' | void> {
  const { db, boss, config } = services;
  const { userEffectId, round } = job.data;
  const row = await findUserEffect(db, userEffectId);
  // Archived meanwhile, a newer round, or a duplicate job: nothing to do.
  if (!row || row.status !== 'processing' || row.moderation_round !== round || row.verdict !== null) return;

  const route = moderationRoute(config);
  if (!route) throw new RoundNotDone('no provider kind with an account here runs moderation; the round waits');
  const leaseS = config.generations.slotLeaseS;
  const lease = await leaseModerationSlot(db, userEffectId, route.kind, leaseS, provider.keys.fingerprints);
  if (!lease) throw new RoundNotDone('no free provider slot; the round waits');
  let verdict: Verdict;
  try {
    const account = await provider.keys.keyOf(lease.accountId);
    if (!account) throw new RoundNotDone('the leased account has no key in this process');
    verdict = await askModel(services, provider.adapters.of(account.kind), account, { lease, route: route.route }, row, signal);
  } finally {
    await releaseModerationSlot(db, lease);
  }
  await db.transaction(async (trx) => {
    await recordVerdict(trx, boss, { userEffectId, round, ...verdict });
    await boss.complete('user-effect-moderation', job.id, null, { db: bossIn(trx) });
  });
  return 'completed';
}

/** Submits the moderation task on the leased account and polls it to its verdict, renewing the lease at every poll. */
async function askModel(
  services: Services,
  adapter: ProviderAdapter,
  account: ProviderAccount,
  { lease, route }: { lease: ModerationLease; route: ModelRoute },
  row: UserEffectRow,
  signal: AbortSignal,
): Promise<Verdict> {
  const { db, storage, config } = services;
  const sample = await storage.presignedGet(row.sample_key, sampleLinkTtlS);
  // One reference per attempt: an attempt never submits twice, and a new attempt of the round (after
  // a failed task or a deadline) must get a new task, not the provider's answer to the old one.
  const clientReference = `user-effect:${row.id}:${row.moderation_round}:${randomUUID()}`;
  const submitted = await adapter.submit(account, { route, inputs: [{ url: sample, person: 0 }], prompt: moderationText(row), clientReference });
  switch (submitted.kind) {
    case 'busy':
      await coolDownAccount(db, lease.accountId, submitted.retryAfterS);
      throw new RoundNotDone(`the provider account is busy for ${submitted.retryAfterS} s`);
    case 'unavailable':
      throw new RoundNotDone(`the provider is unavailable: ${submitted.reason}`);
    case 'rejected':
      // The provider could not even read the sample: the model's own verdict for a sample that is no photo.
      if (submitted.errorCode === 'bad_input_image') return { verdict: 'rejected', reason: 'bad_sample' };
      throw new RoundNotDone(`the provider refused the moderation task: ${submitted.errorCode}`);
    case 'accepted':
      break;
  }
  const deadline = Date.now() + config.marketplace.moderationDeadlineS * 1000;
  for (let waitMs = pollFirstMs; Date.now() < deadline; waitMs = Math.min(pollLongestMs, waitMs * 2)) {
    await delay(waitMs, undefined, { signal });
    await renewModerationSlot(db, lease, config.generations.slotLeaseS);
    // With its route: fal names the task by its app, and the verdict is where the route's output says.
    const polled = await adapter.poll(account, submitted.taskId, route);
    if (polled.kind === 'running' || polled.kind === 'unavailable') continue;
    if (polled.kind === 'failed') throw new RoundNotDone(`the moderation task failed: ${polled.errorCode}`);
    // A language model answers inline (fal's vision router, Replicate's tokens); a file at a link is read.
    const answer = polled.resultUrl === null ? polled.text ?? null : (await adapter.fetchResult(polled.resultUrl)).body.toString('utf8');
    if (answer === null) throw new RoundNotDone('the moderation task ended without an answer');
    const verdict = parseVerdict(answer);
    if (!verdict) throw new RoundNotDone('the moderation model answered no verdict');
    return verdict;
  }
  throw new RoundNotDone(`no verdict within ${config.marketplace.moderationDeadlineS} s`);
}

/**
 * The worker role's consumer of `user-effect-moderation`: up to MODERATION_CONCURRENCY rounds at
 * once, woken by every new or published user effect. Stopping aborts the rounds still polling:
 * their jobs fail and come back to another worker.
 */
export async function startModeration(services: Services, provider: { adapters: ProviderAdapters; keys: AccountKeys }): Promise<RunningPart> {
  const stopping = new AbortController();
  const consumer = await startQueueConsumer(services, {
    queue: 'user-effect-moderation',
    concurrency: services.config.marketplace.moderationConcurrency,
    idleMs: idleWaitMs,
    wakeOn: [{ channel: 'user_effect_status', when: (event) => event.status === 'processing' }],
    handle: (job) => moderateRound(services, provider, stopping.signal, job),
  });
  return {
    stop: async () => {
      stopping.abort();
      await consumer.stop();
    },
  };
}
