import type { Knex } from 'knex';

/**
 * Sign-in data around `users`: passwords, avatars, provider identities, devices and refresh tokens.
 * Every new `users` column has a default, so a bare `insert into users (is_anonymous)` still works.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table users
      add column password_hash text,
      add column avatar_key text`);
  await knex.raw('create index users_guests_by_last_sign_in on users (last_sign_in_at) where is_anonymous');

  // One row per (provider, subject) for life; `created_at` gives the order of `providers`.
  await knex.raw(`
    create table identities (
      id uuid primary key default gen_random_uuid(),
      user_id uuid not null references users (id) on delete cascade,
      provider text not null check (provider in ('idp_a', 'idp_b', 'idp_c', 'idp_d')),
      subject text not null,
      -- idp_c: the sign-in button of the last sign-in (btn_1, btn_2, btn_3).
      button text,
      -- idp_b: the refresh token from the authorization code, sealed, kept only to revoke it at deletion.
      sealed_refresh_token text,
      created_at timestamptz not null default clock_timestamp(),
      last_sign_in_at timestamptz not null default now(),
      constraint identities_subject_once unique (provider, subject)
    )`);
  await knex.raw('create index identities_by_user on identities (user_id, created_at)');

  // Devices outlive their users: the start-credit mark must survive deletion of the guest.
  // Device ids are keys to guest accounts, so only their SHA-256 is stored.
  await knex.raw(`
    create table devices (
      device_hash text primary key,
      guest_user_id uuid references users (id) on delete set null,
      start_credits_granted_at timestamptz,
      created_at timestamptz not null default now()
    )`);
  await knex.raw('create index devices_by_guest on devices (guest_user_id) where guest_user_id is not null');

  // Which account signed in from which device: the referral same-device rule, trusted-device login.
  await knex.raw(`
    create table user_devices (
      user_id uuid not null references users (id) on delete cascade,
      device_hash text not null,
      first_seen_at timestamptz not null default now(),
      last_seen_at timestamptz not null default now(),
      primary key (user_id, device_hash)
    )`);
  await knex.raw('create index user_devices_by_device on user_devices (device_hash)');

  await knex.raw(`
    create table refresh_tokens (
      id uuid primary key default gen_random_uuid(),
      user_id uuid not null references users (id) on delete cascade,
      token_hash text not null unique,
      family_id uuid not null,
      device_hash text,
      state text not null default 'active' check (state in ('active', 'superseded', 'revoked')),
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    )`);
  await knex.raw("create index refresh_tokens_by_user on refresh_tokens (user_id) where state <> 'revoked'");
  await knex.raw('create index refresh_tokens_by_expiry on refresh_tokens (expires_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('refresh_tokens');
  await knex.schema.dropTable('user_devices');
  await knex.schema.dropTable('devices');
  await knex.schema.dropTable('identities');
  await knex.raw('drop index users_guests_by_last_sign_in');
  await knex.raw('alter table users drop column password_hash, drop column avatar_key');
}
