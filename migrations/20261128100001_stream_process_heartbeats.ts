import type { Knex } from 'knex';

/**
 * Stream slots lapse with their process, not one by one: `stream_processes` holds one row per web
 * process that holds streams, renewed by its heartbeat, and a lease counts while its process's row
 * is unexpired. A heartbeat then writes one row however many streams the process holds (it used to
 * rewrite every lease, a burst of writes per beat at tens of thousands of streams). Unlogged like
 * the leases: both describe live connections.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create unlogged table stream_processes (
      id uuid primary key,
      expires_at timestamptz not null
    )`);
  await knex.raw('delete from stream_leases');
  await knex.raw('drop index stream_leases_by_user');
  await knex.raw('drop index stream_leases_by_expiry');
  await knex.raw('alter table stream_leases drop column expires_at');
  // The cap's count reads both columns: an index-only scan where the visibility map allows.
  await knex.raw('create index stream_leases_by_user on stream_leases (user_id, process_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('delete from stream_leases');
  await knex.raw('drop index stream_leases_by_user');
  await knex.raw('alter table stream_leases add column expires_at timestamptz not null');
  await knex.raw('create index stream_leases_by_user on stream_leases (user_id, expires_at)');
  await knex.raw('create index stream_leases_by_expiry on stream_leases (expires_at)');
  await knex.raw('drop table stream_processes');
}
