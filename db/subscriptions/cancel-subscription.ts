import type { Knex } from 'knex';
import type { CancelReason, SubscriptionRow } from './model';

/**
 * The owner cancels, as Stripe's `cancel_at_period_end`: an `active` or
 * `past_due` subscription stays as it is, with its plan credits, until its period end, and is then
 * not renewed (a `past_due` one, whose period already ended, is handed to the clock at once so its
 * next retry never comes); a `pending` one, never paid, ends at once as `expired`. Guarded: a second
 * cancel, or one of an ended subscription, changes nothing (the caller tells the two apart).
 */
export async function cancelSubscription(
  trx: Knex.Transaction,
  cancel: { id: string; userId: string; reason: CancelReason; comment: string | null },
): Promise<SubscriptionRow | null> {
  const { rows: [row] } = await trx.raw<{ rows: SubscriptionRow[] }>(
    `update subscriptions set
       cancel_at_period_end = (status <> 'pending'),
       canceled_at = now(),
       cancel_reason = :reason,
       cancel_comment = :comment,
       status = case when status = 'pending' then 'expired' else status end,
       ended_at = case when status = 'pending' then now() end,
       ended_reason = case when status = 'pending' then 'canceled' end,
       next_action_at = case status when 'past_due' then now() when 'pending' then null else next_action_at end
     where id = :id and user_id = :userId and status in ('pending', 'active', 'past_due') and not cancel_at_period_end
     returning *`,
    cancel,
  );
  return row ?? null;
}
