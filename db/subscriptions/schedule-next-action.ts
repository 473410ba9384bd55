import type { Knex } from 'knex';
import { nextActiveActionSql } from './schedule';

/**
 * Puts the clock's next look at the subscription where its state says: none while a charge for the
 * next period has no outcome (the outcome's transition sets it), an active one at its next reminder
 * or its period end, a `past_due` one at its retry (kept), an ended or pending one never.
 */
export async function scheduleNextAction(trx: Knex.Transaction, subscriptionId: string): Promise<void> {
  await trx.raw(
    `update subscriptions s set next_action_at = case
       when exists (select 1 from payments p where p.id = s.payment_id and p.status = 'created' and p.period = s.period + 1) then null
       when s.status = 'active' then ${nextActiveActionSql('s.current_period_end')}
       when s.status = 'past_due' then s.next_action_at
     end
     where s.id = ?`,
    [subscriptionId],
  );
}
