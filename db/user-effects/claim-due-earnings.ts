import type { Knex } from 'knex';

/**
 * Ids of up to `limit` pending earnings whose `settles_at` has come, oldest first. Read only: two
 * schedulers may pick the same one, and `settleEarning`'s guard lets exactly one of them settle it.
 */
export async function findDueEarnings(db: Knex, limit: number): Promise<string[]> {
  return db('user_effect_earnings')
    .where({ status: 'pending' })
    .andWhere('settles_at', '<=', db.fn.now())
    .orderBy('settles_at')
    .limit(limit)
    .pluck('id');
}

/** Seconds until the next pending earning settles (0 when one is due), or null when none waits. */
export async function secondsUntilNextSettlement(db: Knex): Promise<number | null> {
  const { rows: [row] } = await db.raw<{ rows: { seconds: number | null }[] }>(
    "select extract(epoch from min(settles_at) - now())::float8 as seconds from user_effect_earnings where status = 'pending'",
  );
  // Null when none waits (greatest() would have made that 0: "due now", forever).
  return row.seconds === null ? null : Math.max(0, row.seconds);
}
