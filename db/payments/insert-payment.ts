import type { Knex } from 'knex';
import type { PaymentMethod } from '../../common/payment-method';
import type { WatchSettings } from './watch';

export interface NewPayment {
  userId: string;
  /** A pack or a subscription plan. */
  sells: { productId: string } | { planId: string };
  offerIssueId: string | null;
  amountMinor: number;
  currency: number;
  credits: number;
  method: PaymentMethod;
  /** The subscription period it pays and the attempt (unique together, so each is charged once). */
  subscription?: { id: string; period: number; attempt: number };
}

/**
 * A new `created` payment, watched by reconciliation from PAYMENT_RECONCILE_FIRST_CHECK_S on; its
 * processor order lives PAYMENT_SESSION_TIMEOUT_S. Answers its id.
 */
export async function insertPayment(trx: Knex.Transaction, payment: NewPayment, settings: WatchSettings): Promise<string> {
  const { rows: [row] } = await trx.raw<{ rows: { id: string }[] }>(
    `insert into payments (user_id, product_id, plan_id, offer_issue_id, amount_minor, currency, credits, method,
       subscription_id, period, attempt, expires_at, next_check_at)
     values (:userId, :productId, :planId, :offerIssueId, :amountMinor, :currency, :credits, :method,
       :subscriptionId, :period, :attempt,
       now() + make_interval(secs => :sessionS), now() + make_interval(secs => :firstCheckS))
     returning id`,
    {
      userId: payment.userId,
      productId: 'productId' in payment.sells ? payment.sells.productId : null,
      planId: 'planId' in payment.sells ? payment.sells.planId : null,
      offerIssueId: payment.offerIssueId,
      amountMinor: payment.amountMinor,
      currency: payment.currency,
      credits: payment.credits,
      method: payment.method,
      subscriptionId: payment.subscription?.id ?? null,
      period: payment.subscription?.period ?? null,
      attempt: payment.subscription?.attempt ?? null,
      sessionS: settings.sessionTimeoutS,
      firstCheckS: settings.reconcileFirstCheckS,
    },
  );
  return row.id;
}
