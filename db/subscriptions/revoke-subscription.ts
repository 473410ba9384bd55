import type { Knex } from 'knex';
import { burnPlanCredits } from '../credits/ledger';
import type { SubscriptionRow } from './model';

/**
 * `active` or `past_due` → `revoked` (terminal): a period payment was refunded or charged back.
 * The remaining plan credits burn at once (one `plan_expired` row); no renewal follows.
 */
export async function revokeSubscription(trx: Knex.Transaction, subscriptionId: string): Promise<SubscriptionRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: SubscriptionRow[] }>(
    `update subscriptions set status = 'revoked', ended_at = now(), ended_reason = 'payment_refunded', next_action_at = null
     where id = :subscriptionId and status in ('active', 'past_due')
     returning *`,
    { subscriptionId },
  );
  if (row) await burnPlanCredits(trx, { userId: row.user_id, subscriptionId: row.id });
  return row ?? null;
}
