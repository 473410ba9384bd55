import type { Knex } from 'knex';
import type { SubscriptionRow } from './model';

export interface LockedSubscription extends SubscriptionRow {
  /** The database's clock. */
  now: Date;
  /** A charge for the next period was started and has no outcome yet. */
  charge_under_way: boolean;
}

/** The subscription, locked for the rest of the transaction, with the database's clock beside it. */
export async function lockSubscription(trx: Knex.Transaction, subscriptionId: string): Promise<LockedSubscription | null> {
  const { rows: [row] } = await trx.raw<{ rows: LockedSubscription[] }>(
    `select s.*, now() as now,
       coalesce(p.status = 'created' and p.period = s.period + 1, false) as charge_under_way
     from subscriptions s left join payments p on p.id = s.payment_id
     where s.id = ?
     for update of s`,
    [subscriptionId],
  );
  return row ?? null;
}
