import type { Knex } from 'knex';
import { maxRenewalAttempts, type SubscriptionRow, type SubscriptionStatus } from './model';

/**
 * The clock starts a charge for the next period: at the end of an `active` period, or at a retry
 * of a `past_due` one. Counts the attempt and stops the clock until the charge has an outcome (its
 * payment's transitions set the next step). Guarded by status, period and attempt count, so however
 * many schedulers look at once, each attempt starts once. Answers the row, or null.
 */
export async function startRenewal(
  trx: Knex.Transaction,
  current: { id: string; status: SubscriptionStatus; period: number; renewalAttempts: number },
): Promise<SubscriptionRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: SubscriptionRow[] }>(
    `update subscriptions set renewal_attempts = renewal_attempts + 1, next_action_at = null
     where id = :id and status = :status and period = :period and renewal_attempts = :renewalAttempts
       and renewal_attempts < :maxAttempts
       -- An active subscription is charged once at its period end; the retries belong to past_due.
       and (status = 'past_due' or renewal_attempts = 0)
     returning *`,
    { ...current, maxAttempts: maxRenewalAttempts },
  );
  return row ?? null;
}
