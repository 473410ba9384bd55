import type { Knex } from 'knex';
import { burnPlanCredits, debitUpTo, grantPlanCredits, hasEntry } from '../credits/ledger';
import type { PaymentRow } from '../payments/model';
import { expireSubscription } from './expire-subscription';
import { markPastDue } from './mark-past-due';
import { maxRenewalAttempts } from './model';
import { revokeSubscription } from './revoke-subscription';
import { startPaidPeriod } from './start-paid-period';

/**
 * What a subscription's payment changing status does to the subscription, called by the payment's
 * own transition in its transaction (`db/payments/mark-*.ts`, `close-unregistered.ts`), so a
 * payment and its subscription never disagree.
 */
type PeriodPayment = PaymentRow & { subscription_id: string; period: number; attempt: number };

export function isPeriodPayment(payment: PaymentRow): payment is PeriodPayment {
  return payment.subscription_id !== null;
}

/**
 * Paid: its period starts and its credits are granted (after what is left of the previous period
 * burned, so a `plan_expired` row always comes before the next `plan_grant`). False when the
 * subscription could not take it (it ended meanwhile, or the period was paid by another attempt):
 * then the money bought the period's credits as a plain purchase, which the caller credits.
 */
export async function periodPaid(trx: Knex.Transaction, payment: PeriodPayment): Promise<boolean> {
  const started = await startPaidPeriod(trx, { subscriptionId: payment.subscription_id, paymentId: payment.id, paidPeriod: payment.period });
  if (!started) return false;
  if (started.has_open_credits) await burnPlanCredits(trx, { userId: payment.user_id, subscriptionId: started.id });
  await grantPlanCredits(trx, {
    userId: payment.user_id,
    subscriptionId: started.id,
    paymentId: payment.id,
    amount: payment.credits,
    expiresAt: started.current_period_end!,
  });
  return true;
}

/**
 * Not paid. The first period: a declined attempt leaves the subscription `pending` (the payer may
 * try again on the same page), an expired or never registered order ends it. A renewal: any of the
 * three is a declined charge, retried later (`past_due`) or, after the last attempt, the end.
 */
export async function periodNotPaid(trx: Knex.Transaction, payment: PeriodPayment, outcome: 'declined' | 'expired' | 'not_registered'): Promise<void> {
  if (payment.period === 1) {
    if (outcome === 'declined') return;
    await expireSubscription(trx, { id: payment.subscription_id, from: ['pending'], reason: outcome === 'expired' ? 'payment_expired' : 'not_registered' });
    return;
  }
  const declined = { subscriptionId: payment.subscription_id, paidPeriod: payment.period, attempt: payment.attempt };
  if (payment.attempt < maxRenewalAttempts) {
    await markPastDue(trx, declined);
    return;
  }
  await expireSubscription(trx, {
    id: payment.subscription_id, from: ['active', 'past_due'], reason: 'renewal_declined', period: payment.period - 1, renewalAttempts: payment.attempt,
  });
}

/**
 * Refunded or charged back: any period's payment revokes the subscription and burns what is left
 * of its plan credits. Credits it bought as a plain purchase (paid after its subscription ended)
 * are revoked like a pack's.
 */
export async function periodRefunded(trx: Knex.Transaction, payment: PeriodPayment): Promise<void> {
  await revokeSubscription(trx, payment.subscription_id);
  if (await hasEntry(trx, { userId: payment.user_id, kind: 'purchase', reference: payment.id })) {
    await debitUpTo(trx, { userId: payment.user_id, kind: 'purchase_revoke', amount: payment.credits, reference: payment.id });
  }
}
