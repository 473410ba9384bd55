import type { Knex } from 'knex';

/**
 * Stream slots: one row per open SSE stream, whatever its kind and web process, so the per-user cap
 * holds across processes. Its process renews `expires_at` with every heartbeat and deletes the row
 * when the stream ends; a row whose process died simply lapses and no longer counts. Unlogged: the
 * rows describe live connections, and a database crash that loses them only forgives a few slots.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create unlogged table stream_leases (
      id uuid primary key,
      user_id uuid not null,
      process_id uuid not null,
      kind text not null,
      object_id uuid not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null
    )`);
  await knex.raw('create index stream_leases_by_user on stream_leases (user_id, expires_at)');
  await knex.raw('create index stream_leases_by_process on stream_leases (process_id)');
  await knex.raw('create index stream_leases_by_expiry on stream_leases (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('stream_leases');
}
