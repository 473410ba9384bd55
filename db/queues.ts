import type { Knex } from 'knex';
import { fromKnex, type Db, type PgBoss, type SendOptions } from 'pg-boss';
import { providerKinds, type ProviderKind } from '../common/model-route';
import type { PushJob } from './push/push-job';

/**
 * The FIFO line of the generations that run on one provider kind: `generation-submit.replicate`
 * holds the ticket of each pending generation of that kind (`db/generations/submit-ticket.ts`), so a
 * generation waits for a slot of its own kind only.
 */
export type SubmitQueue = `generation-submit.${ProviderKind}`;

export function submitQueueOf(kind: ProviderKind): SubmitQueue {
  return `generation-submit.${kind}`;
}

/**
 * Every pg-boss queue of the service, by its one name, with the data its jobs carry. Each queue is
 * created at start (`db/boss.ts`) and worked by one consumer of the worker roles.
 */
export type QueuePayloads = { [Q in SubmitQueue]: { generationId: string } } & OtherQueuePayloads;

interface OtherQueuePayloads {
  /** Make the preview of a stored result, then mark the generation succeeded. */
  'generation-media': { generationId: string };
  /** One round of a user effect's moderation by the provider's moderation model (worker role). */
  'user-effect-moderation': { userEffectId: string; round: number };
  /** The sample's preview of a moderated round, then the status moves on (media role). */
  'user-effect-media': { userEffectId: string; round: number };
  /** One push to every device of a user: a terminal generation status, a subscription reminder, author earnings, an operator's removal. */
  'push-send': PushJob;
  /** Charge a subscription's saved card for its next period (`db/subscriptions/start-renewal.ts` made the payment). */
  'subscription-renew': { paymentId: string };
  /** Revoke the idp_b grant of a deleted account. */
  'revoke-idp-b': { sealedRefreshToken: string };
  /** Cron-fired by the scheduler role: their data is empty. */
  'payment-reconcile': object;
  'payment-chargeback-watch': object;
  'expire-guests': object;
}

export type QueueName = keyof QueuePayloads;

// Waiting for a slot is not an error (pending expiry ends a wait): a ticket put back in line keeps
// its `created_on`, and so its place, however often it is fetched again.
const submitRetries: SendOptions = { retryLimit: 1_000_000, retryDelay: 0, retryBackoff: false };


/**
 * How each queue's jobs are retried; cron-fired jobs run again at their next tick instead. pg-boss's
 * `retryBackoff` doubles `retryDelay` per retry with jitter (each wait anywhere from the step to
 * twice it), and `retryDelayMax` caps it: every job that calls an outside service backs off so, up
 * to a cap, while that service's circuit makes its tries during an outage fail at once.
 */
const retries: Record<QueueName, SendOptions> = {
  ...Object.fromEntries(providerKinds.map((kind) => [submitQueueOf(kind), submitRetries])) as Record<SubmitQueue, SendOptions>,
  // A preview takes seconds. Its consumer touches the job while it works (the heartbeat): a job
  // nobody touched for 10 s (its media process died, or the answer to its fetch was lost) is failed
  // by the worker sweeps, and one whose process is dead at once; a hung build ends at the expiry,
  // far below MEDIA_TIMEOUT_S. The tries span about six minutes, so an outage is waited out.
  'generation-media': { retryLimit: 10, retryDelay: 2, retryBackoff: true, retryDelayMax: 60, expireInSeconds: 120, heartbeatSeconds: 10 },
  // Waiting for a free slot or an unavailable provider is no error: the job comes back after a few seconds.
  'user-effect-moderation': { retryLimit: 10_000, retryDelay: 2, retryBackoff: false, expireInSeconds: 900 },
  'user-effect-media': { retryLimit: 5, retryDelay: 5, retryBackoff: true, expireInSeconds: 600 },
  'push-send': { retryLimit: 3, retryDelay: 10, retryBackoff: true, retryDelayMax: 300 },
  // A processor that stays away longer leaves the payment unregistered: reconciliation closes it
  // after an hour and the subscription retries later, as after a decline.
  'subscription-renew': { retryLimit: 5, retryDelay: 5, retryBackoff: true, retryDelayMax: 120, expireInSeconds: 300 },
  // Nobody waits for a revocation: its tries span two to three hours (the last waits capped at an hour).
  'revoke-idp-b': { retryLimit: 8, retryDelay: 30, retryBackoff: true, retryDelayMax: 3600 },
  'payment-reconcile': {},
  'payment-chargeback-watch': {},
  'expire-guests': {},
};

export const queueNames = Object.keys(retries) as QueueName[];

/**
 * pg-boss's `db` option bound to a knex transaction: send, fetch, complete and fail then happen in
 * the caller's transaction, so a job changes state exactly when the rows beside it do.
 */
export function bossIn(trx: Knex.Transaction): Db {
  return fromKnex(trx);
}

/** Enqueues inside the caller's transaction, so the job exists exactly when the transaction commits. */
export async function enqueue<Q extends QueueName>(
  boss: PgBoss,
  trx: Knex.Transaction,
  queue: Q,
  data: QueuePayloads[Q],
  options: Pick<SendOptions, 'id'> = {},
): Promise<string | null> {
  return boss.send(queue, data, { ...retries[queue], ...options, db: bossIn(trx) });
}

/**
 * `enqueue` for many jobs of one queue in one statement (pg-boss `insert`), inside the caller's
 * transaction (null: on pg-boss's own connection): a batch that starts many things at once makes
 * their jobs at the cost of one. An `id` names a job after what it works on (a renewal job after
 * its payment); a job whose id the queue holds already is skipped.
 */
export async function enqueueMany<Q extends QueueName>(
  boss: PgBoss,
  trx: Knex.Transaction | null,
  queue: Q,
  jobs: readonly { id?: string; data: QueuePayloads[Q] }[],
): Promise<void> {
  if (jobs.length === 0) return;
  const { retryLimit, retryDelay, retryBackoff, retryDelayMax, expireInSeconds, heartbeatSeconds } = retries[queue];
  const options = trx ? { db: bossIn(trx) } : {};
  await boss.insert(queue, jobs.map(({ id, data }) => ({ id, data, retryLimit, retryDelay, retryBackoff, retryDelayMax, expireInSeconds, heartbeatSeconds })), options);
}
