import type { Knex } from 'knex';
import type { SubscriptionRow } from './model';

/**
 * The clock's batch: claims up to `limit` `active` subscriptions whose period has ended and that
 * are due now (not cancelled, not charged yet for the next period, no charge under way) and starts
 * the renewal of each, in one statement: the attempt counted and the clock stopped until the charge
 * has an outcome, as `startRenewal` does for one. `skip locked`, so clocks in several scheduler
 * processes take disjoint batches; the guards are `startRenewal`'s, so a row another clock (or the
 * one-by-one path) started meanwhile is not started again. Answers the started rows.
 */
export async function startDueRenewals(trx: Knex.Transaction, limit: number): Promise<SubscriptionRow[]> {
  const { rows } = await trx.raw<{ rows: SubscriptionRow[] }>(
    `with due as (
       select s.id from subscriptions s
       where s.next_action_at <= now()
         and s.status = 'active' and s.current_period_end <= now() and not s.cancel_at_period_end
         and s.renewal_attempts = 0
         and not exists (select 1 from payments p where p.id = s.payment_id and p.status = 'created' and p.period = s.period + 1)
       order by s.next_action_at
       limit :limit
       for update of s skip locked
     )
     update subscriptions s set renewal_attempts = renewal_attempts + 1, next_action_at = null
     from due
     where s.id = due.id and s.status = 'active' and s.renewal_attempts = 0
     returning s.*`,
    { limit },
  );
  return rows;
}
