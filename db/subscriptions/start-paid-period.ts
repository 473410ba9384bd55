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
 */
export async function startPaidPeriod(
  trx: Knex.Transaction,
  paid: { subscriptionId: string; paymentId: string; paidPeriod: number },
): Promise<SubscriptionRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: SubscriptionRow[] }>(
    `update subscriptions set
       status = 'active',
       period = period + 1,
       renewal_attempts = 0,
       current_period_start = ${periodStart},
       current_period_end = ${periodStart} + ${periodLengthSql},
       payment_id = :paymentId,
       next_action_at = ${nextActiveActionSql(`(${periodStart} + ${periodLengthSql})`)}
     where id = :subscriptionId and status in ('pending', 'active', 'past_due') and period = :paidPeriod - 1
     returning *`,
    paid,
  );
  return row ?? null;
}
