import type { Knex } from 'knex';

/**
 * The credit ledger: `users.balance` is the running total, `credit_transactions` the append-only
 * history written in the same transaction as every balance change. The unique key makes a repeated
 * grant, refund or purchase with the same reference a no-op.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table credit_transactions (
      id uuid primary key default gen_random_uuid(),
      -- Several rows share one now() when written in one transaction; seq keeps their true order.
      seq bigint generated always as identity,
      user_id uuid not null references users (id) on delete cascade,
      kind text not null,
      amount integer not null,
      balance_after integer not null check (balance_after >= 0),
      reference text not null,
      created_at timestamptz not null default now(),
      constraint credit_transactions_once unique (user_id, kind, reference)
    )`);
  // History pages read newest first per user.
  await knex.raw('create index credit_transactions_user_newest on credit_transactions (user_id, seq desc)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('credit_transactions');
}
