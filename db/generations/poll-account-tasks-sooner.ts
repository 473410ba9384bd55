import type { Knex } from 'knex';

/**
 * The polls of an account's tasks that wait beyond `inMs` from now (deferred while its circuit was
 * open, or paced far apart) come due then instead, spread evenly over the following `spreadMs` in
 * the order they were due, so that they do not all come at once and the one deferred first comes
 * first. A task under a poll now is left to its poller, and a row another statement holds is skipped
 * (it is being claimed or brought forward already): two callers never wait for each other's rows.
 * Answers how many were brought forward.
 */
export async function pollAccountTasksSooner(db: Knex, accountId: number, { inMs, spreadMs }: { inMs: number; spreadMs: number }): Promise<number> {
  const { rowCount } = await db.raw<{ rowCount: number }>(
    `with later as (
       select id, next_poll_at from generations
       where provider_account_id = :accountId and status = 'processing' and result_stored_at is null and claimed_by is null
         and next_poll_at > now() + (:inMs::float8 + :spreadMs::float8) * interval '1 millisecond'
       for update skip locked
     ), placed as (
       select id, row_number() over (order by next_poll_at, id) - 1 as place, count(*) over () as count from later
     )
     update generations g set next_poll_at = now() + (:inMs::float8 + :spreadMs::float8 * placed.place / placed.count) * interval '1 millisecond'
     from placed
     where g.id = placed.id`,
    { accountId, inMs, spreadMs },
  );
  return rowCount;
}
