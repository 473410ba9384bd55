import type { Knex } from 'knex';

/**
 * Push: the devices an account registered (`POST /v1/devices`), and the log of every push sent.
 * A token belongs to one account at a time (unique). `device_hash` is the SHA-256 of the client's
 * `device_id` (a key to guest accounts, so never stored as is): a token moves to another account only
 * from the same installation. The log's unique key makes a retried push job skip devices it reached.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table push_devices (
      id uuid primary key default gen_random_uuid(),
      user_id uuid not null references users (id) on delete cascade,
      token text not null unique,
      platform text not null check (platform in ('ios', 'android')),
      device_hash text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
  await knex.raw('create index push_devices_by_user on push_devices (user_id)');

  await knex.raw(`
    create table push_log (
      id uuid primary key default gen_random_uuid(),
      user_id uuid not null references users (id) on delete cascade,
      device_id uuid not null,
      platform text not null,
      kind text not null,
      reference text not null,
      title text not null,
      body text not null,
      data jsonb not null,
      sent_at timestamptz not null default now(),
      constraint push_log_once unique (kind, reference, device_id)
    )`);
  await knex.raw('create index push_log_by_user on push_log (user_id, sent_at desc)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('push_log');
  await knex.schema.dropTable('push_devices');
}
