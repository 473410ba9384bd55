import type { Knex } from 'knex';

/** Milliseconds until the next task is due (any worker's), or null when none is scheduled. */
export async function nextPollDueInMs(db: Knex): Promise<number | null> {
  const { rows } = await db.raw<{ rows: { ms: number | null }[] }>(
    `select (extract(epoch from min(next_poll_at) - now()) * 1000)::float8 as ms
     from generations where status = 'processing' and next_poll_at is not null`,
  );
  return rows[0].ms;
}
