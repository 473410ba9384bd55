import type { Knex } from 'knex';
import { bossSchema } from './boss';

/**
 * Rows changed in a pg-boss table since its statistics were taken that make them stale: a burst of
 * queued jobs, counted absolutely (a queue swings from empty to thousands in seconds, a small share
 * of a table that keeps weeks of finished jobs).
 */
export const staleAfterChangedRows = 1000;

/** The pg-boss tables (`job_common` and any partitioned queue's) whose statistics are stale, most changed first. */
export async function staleQueueTables(db: Knex): Promise<string[]> {
  const { rows } = await db.raw<{ rows: { table: string }[] }>(
    `select relname as table from pg_stat_user_tables
     where schemaname = ? and n_mod_since_analyze >= ?
     order by n_mod_since_analyze desc`,
    [bossSchema, staleAfterChangedRows],
  );
  return rows.map((row) => row.table);
}

/**
 * Takes the table's statistics now. Answers false when another process is analyzing it (an
 * advisory lock per table; ANALYZE itself would wait for the other one and then sample again).
 */
export async function analyzeQueueTable(db: Knex, table: string): Promise<boolean> {
  return db.transaction(async (trx) => {
    const { rows: [{ locked }] } = await trx.raw<{ rows: { locked: boolean }[] }>(
      'select pg_try_advisory_xact_lock(hashtextextended(?, 0)) as locked',
      [`analyze:${bossSchema}.${table}`],
    );
    if (!locked) return false;
    // A smaller sample than the default 30,000 rows (400 ms measured at 40,000 jobs): enough for
    // what the fetch's plan turns on, how many jobs of each queue wait. Every column, because only
    // a whole-table ANALYZE resets the change count.
    await trx.raw('set local default_statistics_target = 10');
    await trx.raw('analyze ??.??', [bossSchema, table]);
    return true;
  });
}
