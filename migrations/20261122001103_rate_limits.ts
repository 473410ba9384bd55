import type { Knex } from 'knex';

/**
 * Rate-limit state shared by every web process: token buckets, and failure counters for the login
 * lock and the distributed-guessing guard. Rows are disposable: losing them only forgives a client.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create unlogged table rate_limit_buckets (
      key text primary key,
      tokens double precision not null,
      updated_at timestamptz not null
    )`);
  await knex.raw(`
    create unlogged table login_failures (
      key text primary key,
      failures integer not null,
      window_started_at timestamptz not null,
      locked_until timestamptz
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('login_failures');
  await knex.schema.dropTable('rate_limit_buckets');
}
