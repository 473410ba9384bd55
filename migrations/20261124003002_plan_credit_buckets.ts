import type { Knex } from 'knex';

/**
 * Plan credits: a bucket inside the balance per paid subscription period (`db/credits/ledger.ts`).
 * `users.balance` stays the whole balance; a bucket holds the part of it that the period granted
 * (`plan_grant`) and that burns at the period end (`plan_expired`). `payment_id` is the period's
 * payment: one grant per period. An open bucket has `burned_at` null.
 *
 * `credit_transactions.plan_share` says which buckets a row took credits from or returned them to,
 * as `[{"bucket": id, "amount": n}]` (a reserve spends plan credits first; its refund gives each
 * part back to its own bucket), so one operation stays one row.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table plan_credit_buckets (
      id uuid primary key default gen_random_uuid(),
      user_id uuid not null references users (id) on delete cascade,
      subscription_id uuid not null references subscriptions (id) on delete cascade,
      payment_id uuid not null unique references payments (id) on delete cascade,
      granted integer not null check (granted > 0),
      credits integer not null check (credits >= 0 and credits <= granted),
      expires_at timestamptz not null,
      created_at timestamptz not null default now(),
      burned_at timestamptz
    )`);
  await knex.raw('create index plan_credit_buckets_open on plan_credit_buckets (user_id, expires_at) where burned_at is null');
  await knex.raw('create index plan_credit_buckets_by_subscription on plan_credit_buckets (subscription_id) where burned_at is null');
  await knex.raw('alter table credit_transactions add column plan_share jsonb');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table credit_transactions drop column plan_share');
  await knex.raw('drop table plan_credit_buckets');
}
