import type { Knex } from 'knex';
import { burnPlanCredits } from '../credits/ledger';
import type { EndedReason, SubscriptionRow, SubscriptionStatus } from './model';

/**
 * `pending`, `active` or `past_due` → `expired` (terminal): a period ended without a renewal (the
 * subscription was cancelled, or its last retry was declined), or the first payment expired or
 * never reached the processor, or a pending one was cancelled. What is left of the plan credits
 * burns at once (`plan_expired`). `period` and `renewalAttempts`, when given, guard against acting
 * on an outcome that is no longer the latest. Answers the row, or null.
 */
export async function expireSubscription(
  trx: Knex.Transaction,
  ending: { id: string; from: SubscriptionStatus[]; reason: EndedReason; period?: number; renewalAttempts?: number },
): Promise<SubscriptionRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: SubscriptionRow[] }>(
    `update subscriptions set status = 'expired', ended_at = now(), ended_reason = :reason, next_action_at = null
     where id = :id and status = any(:from)
       and (:period::integer is null or period = :period::integer)
       and (:renewalAttempts::integer is null or renewal_attempts = :renewalAttempts::integer)
     returning *`,
    { id: ending.id, from: ending.from, reason: ending.reason, period: ending.period ?? null, renewalAttempts: ending.renewalAttempts ?? null },
  );
  if (row) await burnPlanCredits(trx, { userId: row.user_id, subscriptionId: row.id });
  return row ?? null;
}
