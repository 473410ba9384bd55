import type { Knex } from 'knex';

/**
 * One-off credit packs sold through the external processor (the contract: payments).
 *
 * `payment_products` is the operator's showcase: `position` is the showcase order, `enabled = false`
 * hides a pack and refuses new payments for it (`404`), `purchase_limit` caps payments per account
 * (null: no cap), `offer_only` packs are sold only through a special offer and never listed.
 *
 * `payments` follows the contract's state table. Every status change is one guarded statement
 * (`where status = <expected>`) in `db/payments/`. `next_check_at` is when the
 * scheduler asks the processor about the payment next (null: no longer watched); `last_checked_at`
 * throttles `POST /v1/payments/{id}/refresh`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table payment_products (
      id uuid primary key default gen_random_uuid(),
      code text not null unique,
      title_ru text not null,
      title_en text not null,
      price_minor integer not null check (price_minor > 0),
      currency integer not null default 643 check (currency = 643),
      credits integer not null check (credits > 0),
      badge text,
      position integer not null default 0,
      enabled boolean not null default true,
      purchase_limit integer check (purchase_limit is null or purchase_limit > 0),
      offer_only boolean not null default false,
      created_at timestamptz not null default now()
    )`);
  await knex.raw('create index payment_products_showcase on payment_products (position, created_at) where enabled and not offer_only');

  await knex.raw(`
    create table payments (
      id uuid primary key default gen_random_uuid(),
      user_id uuid not null references users (id) on delete cascade,
      product_id uuid not null references payment_products (id),
      -- The special-offer issue this payment was made under, for offer-only packs.
      offer_issue_id uuid,
      status text not null default 'created'
        check (status in ('created', 'succeeded', 'failed', 'expired', 'refunded')),
      amount_minor integer not null,
      currency integer not null,
      credits integer not null,
      method text not null check (method in ('card', 'sbp')),
      -- Filled once the processor registered the order; a created payment without them is still
      -- being registered (or its registration broke and waits for a retry with the same key).
      processor_order_id text unique,
      payment_url text,
      receipt_url text,
      -- Why a payment was closed by us rather than by the processor (e.g. 'not_registered').
      closed_reason text,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      paid_at timestamptz,
      refunded_at timestamptz,
      status_changed_at timestamptz not null default now(),
      last_checked_at timestamptz,
      next_check_at timestamptz
    )`);
  // The per-user counts of creation: unfinished payments and payments of one pack.
  await knex.raw('create index payments_by_user on payments (user_id, status, product_id)');
  await knex.raw('create index payments_watch on payments (next_check_at) where next_check_at is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table payments');
  await knex.raw('drop table payment_products');
}
