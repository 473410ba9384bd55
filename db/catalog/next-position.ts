import type { Knex } from 'knex';

/** The position after every row of `table` (0 when empty): new rows without one go last, in the order given. */
export async function nextPosition(trx: Knex.Transaction, table: string): Promise<number> {
  const row = await trx(table).max('position as last').first();
  return row?.last === null || row?.last === undefined ? 0 : Number(row.last) + 1;
}
