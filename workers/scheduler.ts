import { stopAll, type RunningPart, type Services } from '../services';
import { startGuestExpiry } from './accounts/expire-guests';
import { startSuccessCountRollUp } from './generations/success-counts';
import { startPaymentReconciliation } from './payments/reconciliation';
import { startSubscriptionClock } from './subscriptions/clock';
import { startEarningSettlement } from './user-effects/settlement';

/**
 * The `scheduler` role: timed work through pg-boss cron (pg-boss lets only one copy fire each
 * schedule), the subscription clock (skip-locked claims) and the settlement of author earnings
 * (guarded statements), so several may run.
 */
export async function startScheduler(services: Services): Promise<RunningPart> {
  const parts: RunningPart[] = [
    // `payment-reconcile` (every minute) and `payment-chargeback-watch` (every five minutes).
    await startPaymentReconciliation(services),
    // `expire-guests` (hourly): idle guests, expired refresh tokens, idle rate-limit rows.
    await startGuestExpiry(services),
    // Subscriptions whose period ends, whose reminder or retry is due: burn, renew or expire, remind.
    await startSubscriptionClock(services),
    // Author earnings whose `settles_at` has come: settled, credited as `effect_earned`, pushed.
    await startEarningSettlement(services),
    // Success tallies into the effects' popularity counts (every 2 s).
    startSuccessCountRollUp(services),
  ];
  services.log.info({ role: 'scheduler', parts: parts.length }, 'role started');
  return stopAll(parts);
}
