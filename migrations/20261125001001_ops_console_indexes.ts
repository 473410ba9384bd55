import type { Knex } from 'knex';

/**
 * The operator console (`api/ops/`) counts generations created per hour over the last day and the
 * ones processing now. A BRIN index on `created_at` (rows arrive in time order) keeps the first a
 * read of the last day's pages at almost no cost to inserts; the second reads a partial index of
 * the few rows in `processing` (pending ones already have `generations_pending`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index generations_created_brin on generations using brin (created_at)');
  await knex.raw("create index generations_processing on generations (started_at) where status = 'processing'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index generations_processing');
  await knex.raw('drop index generations_created_brin');
}
