import type { Knex } from 'knex';
import { maxRenewalAttempts, type SubscriptionRow } from './model';
import { retryDaysAfterEnd } from './schedule';

/**
 * `active` or `past_due` → `past_due`: the renewal charge `attempt` for period `paidPeriod` was
 * declined, and another attempt is left; the clock retries 1, then 3 billing days after the period
 * end. Guarded by the period and the attempt, so only the outcome of the latest charge counts.
 */
export async function markPastDue(
  trx: Knex.Transaction,
  declined: { subscriptionId: string; paidPeriod: number; attempt: number },
): Promise<SubscriptionRow | null> {
  if (declined.attempt >= maxRenewalAttempts) return null;
  const { rows: [row] } = await trx.raw<{ rows: SubscriptionRow[] }>(
    `update subscriptions set status = 'past_due',
       next_action_at = current_period_end + make_interval(secs => :retryAfterDays * billing_day_s)
     where id = :subscriptionId and status in ('active', 'past_due') and period = :paidPeriod - 1 and renewal_attempts = :attempt
     returning *`,
    { ...declined, retryAfterDays: retryDaysAfterEnd[declined.attempt - 1] },
  );
  return row ?? null;
}
