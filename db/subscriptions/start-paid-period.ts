import type { Knex } from 'knex';
import type { SubscriptionRow } from './model';
import { nextActiveActionSql, periodLengthSql } from './schedule';

// The new period's start, from the row as it was (in an UPDATE every column reads the old value).
const periodStart = "(case when status = 'active' then current_period_end else now() end)";

/**
 * `pending`, `active` or `past_due` → `active` with period `paidPeriod`: the payment of that period
 * succeeded. The first period starts now; a renewal paid on time starts where the last period
 * ended (the billing anchor stays); one paid by a retry after a decline starts now, as the app stores
 * do after a billing retry. Guarded by the period, so a second success for the same period (a late
 * capture of an earlier declined attempt) starts nothing. Answers the row, or null.
 *
 * `has_open_credits` tells whether an earlier period's plan credits are still unburned (the clock
 * burns them when it starts the renewal, so normally none are). The subquery reads the statement's
 * snapshot, which is enough: only a grant opens a bucket, and a grant comes after this very
 * transition on this row, so one committed while this statement waited for the row has moved the
 * period on and the guard then matches nothing.
 */
export async function startPaidPeriod(
  trx: Knex.Transaction,
  paid: { subscriptionId: string; paymentId: string; paidPeriod: number },
): Promise<(SubscriptionRow & { has_open_credits: boolean }) | null> {
  const { rows: [row] } = await trx.raw<{ rows: (SubscriptionRow & { has_open_credits: boolean })[] }>(
    `update subscriptions set
       status = 'active',
       period = period + 1,
       renewal_attempts = 0,
       current_period_start = ${periodStart},
       current_period_end = ${periodStart} + ${periodLengthSql},
       payment_id = :paymentId,
       next_action_at = ${nextActiveActionSql(`(${periodStart} + ${periodLengthSql})`)}
     where id = :subscriptionId and status in ('pending', 'active', 'past_due') and period = :paidPeriod - 1
     returning *, exists (
       select 1 from plan_credit_buckets b where b.subscription_id = subscriptions.id and b.burned_at is null
     ) as has_open_credits`,
    paid,
  );
  return row ?? null;
}
