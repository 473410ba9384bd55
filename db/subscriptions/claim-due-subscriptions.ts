import type { Knex } from 'knex';
import type { SubscriptionRow } from './model';

/**
 * Claims up to `limit` subscriptions whose `next_action_at` has come, in one statement
 * (`for update skip locked`), moving it `leaseS` ahead: clocks running at once in several scheduler
 * processes never take the same one, and one whose handler died is simply due again after the lease.
 * The handler sets the real next moment.
 */
export async function claimDueSubscriptions(db: Knex, limit: number, leaseS: number): Promise<SubscriptionRow[]> {
  const { rows } = await db.raw<{ rows: SubscriptionRow[] }>(
    `with due as (
       select id from subscriptions
       where next_action_at <= now()
       order by next_action_at
       limit :limit
       for update skip locked
     )
     update subscriptions s set next_action_at = now() + make_interval(secs => :leaseS)
     from due where s.id = due.id
     returning s.*`,
    { limit, leaseS },
  );
  return rows;
}

/** Seconds until the next subscription is due (0 when one is due now), or null when none waits. */
export async function secondsUntilNextDue(db: Knex): Promise<number | null> {
  const { rows: [row] } = await db.raw<{ rows: { seconds: number | null }[] }>(
    'select extract(epoch from min(next_action_at) - now())::float8 as seconds from subscriptions where next_action_at is not null',
  );
  // Null when none waits (greatest() would have made that 0: "due now", forever).
  return row.seconds === null ? null : Math.max(0, row.seconds);
}
