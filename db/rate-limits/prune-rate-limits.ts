import type { Knex } from 'knex';

/** Forgets bucket and counter rows that no longer hold anything (called by the scheduler's clean-up). */
export async function pruneRateLimits(db: Knex, olderThanS: number): Promise<void> {
  await db.raw("delete from rate_limit_buckets where updated_at < now() - :olderThanS * interval '1 second'", { olderThanS });
  await db.raw(
    `delete from login_failures where window_started_at < now() - :olderThanS * interval '1 second'
       and (locked_until is null or locked_until < now())`,
    { olderThanS },
  );
}
