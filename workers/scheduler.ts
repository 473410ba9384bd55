import { stopAll, type RunningPart, type Services } from '../services';
import { startGuestExpiry } from './accounts/expire-guests';
import { startPaymentReconciliation } from './payments/reconciliation';
import { startSubscriptionClock } from './subscriptions/clock';

/**
 * The `scheduler` role: timed work through pg-boss cron (pg-boss lets only one copy fire each
 * schedule) and the subscription clock (skip-locked claims), so several may run.
 */
export async function startScheduler(services: Services): Promise<RunningPart> {
  const parts: RunningPart[] = [
    // `payment-reconcile` (every minute) and `payment-chargeback-watch` (every five minutes).
    await startPaymentReconciliation(services),
    // `expire-guests` (hourly): idle guests, expired refresh tokens, idle rate-limit rows.
    await startGuestExpiry(services),
    // Subscriptions whose period ends, whose reminder or retry is due: burn, renew or expire, remind.
    await startSubscriptionClock(services),
  ];
  services.log.info({ role: 'scheduler', parts: parts.length }, 'role started');
  return stopAll(parts);
}
