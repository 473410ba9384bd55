import type { Knex } from 'knex';
import { burnPlanCredits } from '../../db/credits/ledger';
import { insertPayment } from '../../db/payments/insert-payment';
import { subscriptionReminderPush } from '../../db/push/push-job';
import { enqueue } from '../../db/queues';
import { claimDueSubscriptions, secondsUntilNextDue } from '../../db/subscriptions/claim-due-subscriptions';
import { expireSubscription } from '../../db/subscriptions/expire-subscription';
import { lockSubscription } from '../../db/subscriptions/lock-subscription';
import type { SubscriptionRow } from '../../db/subscriptions/model';
import { recordLatestPayment } from '../../db/subscriptions/record-latest-payment';
import { recordReminder } from '../../db/subscriptions/record-reminder';
import { reminderDays } from '../../db/subscriptions/schedule';
import { scheduleNextAction } from '../../db/subscriptions/schedule-next-action';
import { startRenewal } from '../../db/subscriptions/start-renewal';
import type { RunningPart, Services } from '../../services';
import { clockRounds, clockSleepMs } from '../runtime/clock-rounds';
import { startJobLoop } from '../runtime/job-loop';

/**
 * The subscription clock of the scheduler role. pg-boss cron ticks once a
 * minute, too coarse for periods counted in billing days of a few seconds, so the clock is a job
 * loop of its own: it claims the subscriptions whose `next_action_at` has come
 * (`claimDueSubscriptions`, skip-locked, so any number of schedulers share the work) and sleeps
 * until the next one is due. For each, in one transaction with the row locked:
 *
 * - an `active` period that ended: its unspent plan credits burn (`plan_expired`), and it is either
 *   over (`cancel_at_period_end`: `expired`) or its renewal starts: a payment for the next period
 *   (unique per period and attempt) and a `subscription-renew` job, which a worker charges;
 * - 3 and 1 billing days before an `active` period's end: the reminder push, once per period each
 *   (`subscription_reminders`);
 * - a `past_due` one at its retry, 1 and 3 billing days after the period end: the next charge, or
 *   the end if it was cancelled meanwhile.
 *
 * Every step is a guarded statement, so a clock that acts late or twice changes nothing twice.
 */
export type ClockStep = 'renewal' | 'reminder' | 'expired' | 'nothing';

/** How long a claimed subscription is left to its handler before another clock may take it. */
const claimLeaseS = 30;
const concurrency = 8;

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

/** Starts the next charge: burns what the ended period left (before any later grant), then the payment and its job. */
async function renew(trx: Knex.Transaction, services: Services, subscription: SubscriptionRow): Promise<ClockStep> {
  const started = await startRenewal(trx, {
    id: subscription.id, status: subscription.status, period: subscription.period, renewalAttempts: subscription.renewal_attempts,
  });
  if (!started) return 'nothing';
  await burnPlanCredits(trx, { userId: started.user_id, subscriptionId: started.id });
  const paymentId = await insertPayment(trx, {
    userId: started.user_id,
    sells: { planId: started.plan_id },
    offerIssueId: null,
    amountMinor: started.renewal_price_minor,
    currency: started.currency,
    credits: started.credits,
    method: 'card',
    subscription: { id: started.id, period: started.period + 1, attempt: started.renewal_attempts },
  }, services.config.payments);
  await recordLatestPayment(trx, started.id, paymentId);
  await enqueue(services.boss, trx, 'subscription-renew', { paymentId });
  return 'renewal';
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
  const { db } = services;
  const sleepMs = clockSleepMs(services.config.billingDayS);
  return startJobLoop(services, {
    name: 'subscription-clock',
    concurrency,
    idleMs: sleepMs,
    claim: async (room) => (room > 0 ? claimDueSubscriptions(db, room, claimLeaseS) : []),
    handle: async (subscription: SubscriptionRow) => { await advanceSubscription(services, subscription.id); },
    nextRoundInMs: clockRounds(sleepMs, () => secondsUntilNextDue(db)),
  });
}
