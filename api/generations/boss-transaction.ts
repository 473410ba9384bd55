import type { Knex } from 'knex';
import type PgBoss from 'pg-boss';
import { connectionOf } from '../../db/knex';

/**
 * pg-boss's `db` option bound to a knex transaction: fetch, complete, fail and send then happen in
 * the caller's transaction, so a job changes state exactly when the generation does.
 */
export async function bossIn(trx: Knex.Transaction): Promise<PgBoss.Db> {
  const connection = await connectionOf(trx);
  return { executeSql: (text: string, values: unknown[]) => connection.query(text, values) };
}
