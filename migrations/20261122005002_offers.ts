import type { Knex } from 'knex';

/**
 * Special offers (the contract: special offers), configured by operators in `offers`:
 *
 * - `code`: the machine name clients get for analytics (`paywall_discount`);
 * - `product_id`: the (usually offer-only) pack the offer sells;
 * - `window_seconds`: how long an issue stays payable, counted from its issue, never extended;
 * - `max_issues_per_account`: how many windows one account may ever get;
 * - `enabled`: false stops new issues and closes live ones;
 * - `position`: which enabled offer is issued first.
 *
 * `offer_issues` is one row per issue to one account: its window is fixed at the issue
 * (`expires_at`), `dismissed_at` marks a closed screen (the offer stays payable).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table offers (
      id uuid primary key default gen_random_uuid(),
      code text not null unique,
      product_id uuid not null references payment_products (id),
      window_seconds integer not null check (window_seconds > 0),
      max_issues_per_account integer not null default 1 check (max_issues_per_account >= 0),
      enabled boolean not null default true,
      position integer not null default 0,
      created_at timestamptz not null default now()
    )`);

  await knex.raw(`
    create table offer_issues (
      id uuid primary key default gen_random_uuid(),
      offer_id uuid not null references offers (id) on delete cascade,
      user_id uuid not null references users (id) on delete cascade,
      issued_at timestamptz not null default now(),
      expires_at timestamptz not null,
      dismissed_at timestamptz
    )`);
  await knex.raw('create index offer_issues_by_user on offer_issues (user_id, expires_at desc)');
  await knex.raw(`
    alter table payments add constraint payments_offer_issue
      foreign key (offer_issue_id) references offer_issues (id) on delete set null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table payments drop constraint payments_offer_issue');
  await knex.raw('drop table offer_issues');
  await knex.raw('drop table offers');
}
