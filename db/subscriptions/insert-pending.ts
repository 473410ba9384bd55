import type { Knex } from 'knex';
import { insertPayment } from '../payments/insert-payment';
import type { WatchSettings } from '../payments/watch';
import { periodDays, type PlanRow } from './model';
import { recordLatestPayment } from './record-latest-payment';

/**
 * A new `pending` subscription to `plan` and the payment of its first period (the plan's price,
 * which an offer plan discounts), in the caller's transaction. The subscription keeps the plan's
 * period, credits and renewal price and the current billing day for its whole life.
 */
export async function insertPendingSubscription(
  trx: Knex.Transaction,
  settings: WatchSettings,
  request: { userId: string; plan: PlanRow; offerIssueId: string | null; billingDayS: number },
): Promise<{ subscriptionId: string; paymentId: string }> {
  const { plan } = request;
  const { rows: [subscription] } = await trx.raw<{ rows: { id: string }[] }>(
    `insert into subscriptions (user_id, plan_id, offer_issue_id, period_days, billing_day_s, credits, renewal_price_minor, currency)
     values (:userId, :planId, :offerIssueId, :periodDays, :billingDayS, :credits, :renewalPriceMinor, :currency)
     returning id`,
    {
      userId: request.userId,
      planId: plan.id,
      offerIssueId: request.offerIssueId,
      periodDays: periodDays[plan.period],
      billingDayS: request.billingDayS,
      credits: plan.credits,
      renewalPriceMinor: plan.renewal_price_minor ?? plan.price_minor,
      currency: plan.currency,
    },
  );
  const paymentId = await insertPayment(trx, {
    userId: request.userId,
    sells: { planId: plan.id },
    offerIssueId: request.offerIssueId,
    amountMinor: plan.price_minor,
    currency: plan.currency,
    credits: plan.credits,
    method: 'card',
    subscription: { id: subscription.id, period: 1, attempt: 1 },
  }, settings);
  await recordLatestPayment(trx, subscription.id, paymentId);
  return { subscriptionId: subscription.id, paymentId };
}
