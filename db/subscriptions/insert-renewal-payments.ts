import type { Knex } from 'knex';
import type { WatchSettings } from '../payments/watch';

/**
 * The payments of renewals the clock just started (`start-renewal.ts`, `start-due-renewals.ts`), in
 * one statement however many: for each subscription a `created` card payment of its next period at
 * its renewal price, numbered by the attempt just counted (unique per period and attempt, so each is
 * charged once), watched by reconciliation like any payment (`insertPayment`), and recorded as the
 * subscription's latest payment. Answers each payment with its subscription.
 */
export async function insertRenewalPayments(
  trx: Knex.Transaction,
  subscriptionIds: readonly string[],
  settings: WatchSettings,
): Promise<{ subscription_id: string; payment_id: string }[]> {
  if (subscriptionIds.length === 0) return [];
  const { rows } = await trx.raw<{ rows: { subscription_id: string; payment_id: string }[] }>(
    `with paid as (
       insert into payments (user_id, plan_id, amount_minor, currency, credits, method,
         subscription_id, period, attempt, expires_at, next_check_at)
       select user_id, plan_id, renewal_price_minor, currency, credits, 'card',
         id, period + 1, renewal_attempts,
         now() + make_interval(secs => :sessionS), now() + make_interval(secs => :firstCheckS)
       from subscriptions where id = any(:subscriptionIds::uuid[])
       order by id
       returning id, subscription_id
     )
     update subscriptions s set payment_id = paid.id
     from paid where s.id = paid.subscription_id
     returning s.id as subscription_id, paid.id as payment_id`,
    { subscriptionIds, sessionS: settings.sessionTimeoutS, firstCheckS: settings.reconcileFirstCheckS },
  );
  return rows;
}
