import type { Knex } from 'knex';
import { burnPlanCreditsOf } from '../../db/credits/ledger';
import { subscriptionReminderPush } from '../../db/push/push-job';
import { enqueue, enqueueMany } from '../../db/queues';
import { claimDueSubscriptions, secondsUntilNextDue } from '../../db/subscriptions/claim-due-subscriptions';
import { expireSubscription } from '../../db/subscriptions/expire-subscription';
import { lockSubscription } from '../../db/subscriptions/lock-subscription';
import type { SubscriptionRow } from '../../db/subscriptions/model';
import { insertRenewalPayments } from '../../db/subscriptions/insert-renewal-payments';
import { recordReminder } from '../../db/subscriptions/record-reminder';
import { reminderDays } from '../../db/subscriptions/schedule';
import { scheduleNextAction } from '../../db/subscriptions/schedule-next-action';
import { startDueRenewals } from '../../db/subscriptions/start-due-renewals';
import { startRenewal } from '../../db/subscriptions/start-renewal';
import type { RunningPart, Services } from '../../services';
import { clockRounds, clockSleepMs } from '../runtime/clock-rounds';
import { startJobLoop } from '../runtime/job-loop';

/**
 * The subscription clock of the scheduler role: a job loop of its own, since pg-boss cron ticks once
 * a minute and billing days may last seconds. Each round starts a batch of the renewals due now
 * (`startRenewalBatch`), then claims whatever else is due (`claimDueSubscriptions`), both skip-locked
 * so any number of schedulers share the work, and handles each in one transaction with its row
 * locked: an ended `active` period burns its plan credits and expires or starts its renewal (a
 * payment and a `subscription-renew` job); the reminders 3 and 1 billing days before the end, once
 * each; a `past_due` retry 1 and 3 billing days after. Every step is a guarded statement, so a
 * clock that acts late or twice changes nothing twice.
 */
export type ClockStep = 'renewal' | 'reminder' | 'expired' | 'nothing';

/** How long a claimed subscription is left to its handler before another clock may take it. */
const claimLeaseS = 30;
const concurrency = 8;
/** Renewals started in one transaction: big enough that a mass period end costs few statements, small enough to hold few locks briefly. */
const renewalBatchSize = 200;

export async function advanceSubscription(services: Services, subscriptionId: string): Promise<ClockStep> {
  return services.db.transaction(async (trx) => {
    const subscription = await lockSubscription(trx, subscriptionId);
    if (!subscription) return 'nothing';
    const { now } = subscription;
    if (subscription.charge_under_way) {
      await scheduleNextAction(trx, subscription.id);
      return 'nothing';
    }
    if (subscription.status === 'active' && subscription.current_period_end! <= now) {
      if (subscription.cancel_at_period_end) return expire(trx, subscription);
      return renew(trx, services, subscription);
    }
    if (subscription.status === 'active') {
      const step = await remind(trx, services, subscription, now);
      await scheduleNextAction(trx, subscription.id);
      return step;
    }
    if (subscription.status === 'past_due') {
      if (subscription.cancel_at_period_end) return expire(trx, subscription);
      return renew(trx, services, subscription);
    }
    await scheduleNextAction(trx, subscription.id);
    return 'nothing';
  });
}

async function expire(trx: Knex.Transaction, subscription: SubscriptionRow): Promise<ClockStep> {
  const expired = await expireSubscription(trx, { id: subscription.id, from: [subscription.status], reason: 'canceled', period: subscription.period });
  return expired ? 'expired' : 'nothing';
}

/** Starts the next charge of one subscription (a `past_due` retry, or a renewal the batch did not take). */
async function renew(trx: Knex.Transaction, services: Services, subscription: SubscriptionRow): Promise<ClockStep> {
  const started = await startRenewal(trx, {
    id: subscription.id, status: subscription.status, period: subscription.period, renewalAttempts: subscription.renewal_attempts,
  });
  if (!started) return 'nothing';
  await beginCharges(trx, services, [started]);
  return 'renewal';
}

/**
 * What follows the start of renewals, for one or a batch alike: what the ended periods left burns
 * (before any later grant), then each gets its payment and its `subscription-renew` job, a few
 * statements for the whole batch.
 */
async function beginCharges(trx: Knex.Transaction, services: Services, started: readonly SubscriptionRow[]): Promise<void> {
  await burnPlanCreditsOf(trx, started.map((row) => ({ userId: row.user_id, subscriptionId: row.id })));
  const payments = await insertRenewalPayments(trx, started.map((row) => row.id), services.config.payments);
  // The job is named after its payment: the webhook asks whether it still runs (`paymentWithRenewalJob`).
  await enqueueMany(services.boss, trx, 'subscription-renew', payments.map(({ payment_id: paymentId }) => ({ id: paymentId, data: { paymentId } })));
}

/**
 * One batch of the renewals due now (`startDueRenewals`), started in one transaction: the common
 * case, every period of a plan ending at one moment, costs a few statements per batch instead of a
 * transaction per subscription. Answers how many it started.
 */
export async function startRenewalBatch(services: Services, limit = renewalBatchSize): Promise<number> {
  return services.db.transaction(async (trx) => {
    const started = await startDueRenewals(trx, limit);
    if (started.length > 0) await beginCharges(trx, services, started);
    return started.length;
  });
}

/** The reminder whose moment has come (the nearest to the end, when the clock was late for both), once per period. */
async function remind(trx: Knex.Transaction, services: Services, subscription: SubscriptionRow, now: Date): Promise<ClockStep> {
  const end = subscription.current_period_end!.getTime();
  const daysLeft = [...reminderDays].sort((a, b) => a - b).find((days) => end - days * subscription.billing_day_s * 1000 <= now.getTime());
  if (daysLeft === undefined) return 'nothing';
  const reminder = { subscriptionId: subscription.id, period: subscription.period, daysLeft };
  if (!(await recordReminder(trx, reminder))) return 'nothing';
  await enqueue(services.boss, trx, 'push-send', subscriptionReminderPush({ userId: subscription.user_id, ...reminder }));
  return 'reminder';
}

export async function startSubscriptionClock(services: Services): Promise<RunningPart> {
  const { db, log } = services;
  const sleepMs = clockSleepMs(services.config.billingDayS);
  const rounds = clockRounds(sleepMs, () => secondsUntilNextDue(db));
  let fullBatch = false;
  return startJobLoop(services, {
    name: 'subscription-clock',
    concurrency,
    idleMs: sleepMs,
    claim: async (room) => {
      // The due renewals first, a batch per round; what else is due (reminders, retries, ends) one by one.
      fullBatch = await startRenewalBatch(services).then((started) => started === renewalBatchSize, (error: unknown) => {
        log.error({ err: error }, 'subscription-clock: a renewal batch failed; its subscriptions stay due');
        return false;
      });
      return room > 0 ? claimDueSubscriptions(db, room, claimLeaseS) : [];
    },
    handle: async (subscription: SubscriptionRow) => { await advanceSubscription(services, subscription.id); },
    nextRoundInMs: async (round) => (fullBatch ? 0 : rounds(round)),
  });
}
