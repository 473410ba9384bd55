import type { Knex } from 'knex';

/**
 * The provider-account pool: accounts from PROVIDER_ACCOUNTS (synced at worker start) and one row
 * per concurrency slot. A slot is leased to a generation by one guarded statement with
 * `for update skip locked` (pool/lease-slots.ts); a lease past `lease_expires_at` is free again by
 * itself, so a crashed worker never keeps a slot. API keys are not stored: only a fingerprint, which
 * every worker maps back to the key from its own configuration.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table provider_accounts (
      id integer generated always as identity primary key,
      key_fingerprint text not null unique,
      -- A recognisable, non-secret name for logs and operators (the key's first and last characters).
      label text not null,
      slots integer not null check (slots >= 1),
      -- Set from the provider's Retry-After when it answered 429; the pool skips the account until then.
      cooldown_until timestamptz,
      -- False once the key is no longer configured.
      enabled boolean not null default true,
      updated_at timestamptz not null default now()
    )`);
  await knex.raw(`
    create table provider_slots (
      account_id integer not null references provider_accounts (id) on delete cascade,
      slot_no integer not null,
      generation_id uuid references generations (id) on delete set null,
      lease_expires_at timestamptz,
      primary key (account_id, slot_no)
    )`);
  await knex.raw('create index provider_slots_generation on provider_slots (generation_id) where generation_id is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('provider_slots');
  await knex.schema.dropTable('provider_accounts');
}
