import type { Knex } from 'knex';

/**
 * Subscriptions.
 *
 * `subscription_plans` is the operator's list, like `payment_products`: `position` orders it,
 * `enabled = false` refuses new subscriptions (`404`; running ones keep renewing), `offer_only` plans
 * are sold only through a special offer and never listed; `price_minor` is the first period's price
 * and `renewal_price_minor` (null: the same) what later periods cost, so an offer can discount the
 * first period.
 *
 * `subscriptions` follows the statuses of section 7.1; every change is one guarded statement in
 * `db/subscriptions/`. A subscription keeps what it was sold with (`period_days`, `credits`,
 * `renewal_price_minor`) and the billing day it was created under (`billing_day_s`), so an
 * operator's later edit of the plan or of BILLING_DAY_S never changes a running one. `period` is the
 * number of the current paid period (0 while `pending`); `renewal_attempts` counts the charges made
 * for the next one (at most 3: at the period end, then 1 and 3 billing days later); `next_action_at`
 * is when the scheduler's clock looks at it next (a reminder, the period end, a retry). One live
 * subscription per plan and account: the unique index backs `409 already_subscribed`.
 *
 * Every period is paid by an ordinary payment (`payments.subscription_id`, `period`, `attempt`);
 * `(subscription_id, period, attempt)` is unique, so a period's charge exists once whatever runs
 * twice, and the processor's order number (the payment id) makes a retried call charge nothing new.
 * A payment sells either a pack (`product_id`) or a plan (`plan_id`); so does an offer.
 *
 * `subscription_reminders` logs each reminder once per (subscription, period, days left).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table subscription_plans (
      id uuid primary key default gen_random_uuid(),
      code text not null unique,
      title_ru text not null,
      title_en text not null,
      description_ru text not null default '',
      description_en text not null default '',
      period text not null check (period in ('week', 'month', 'year')),
      price_minor integer not null check (price_minor > 0),
      renewal_price_minor integer check (renewal_price_minor is null or renewal_price_minor > 0),
      currency integer not null default 643 check (currency = 643),
      credits integer not null check (credits > 0),
      badge text,
      position integer not null default 0,
      enabled boolean not null default true,
      offer_only boolean not null default false,
      created_at timestamptz not null default now()
    )`);

  await knex.raw(`
    create table subscriptions (
      id uuid primary key default gen_random_uuid(),
      user_id uuid not null references users (id) on delete cascade,
      plan_id uuid not null references subscription_plans (id),
      offer_issue_id uuid references offer_issues (id) on delete set null,
      status text not null default 'pending'
        check (status in ('pending', 'active', 'past_due', 'expired', 'revoked')),
      period_days integer not null check (period_days > 0),
      billing_day_s integer not null check (billing_day_s > 0),
      credits integer not null check (credits > 0),
      renewal_price_minor integer not null check (renewal_price_minor > 0),
      currency integer not null,
      period integer not null default 0 check (period >= 0),
      current_period_start timestamptz,
      current_period_end timestamptz,
      renewal_attempts integer not null default 0 check (renewal_attempts between 0 and 3),
      -- The newest payment of the subscription (the latest period's, or the charge under way).
      payment_id uuid,
      -- The saved card the first payment left at the processor; renewals charge it.
      card_binding_id text,
      cancel_at_period_end boolean not null default false,
      canceled_at timestamptz,
      cancel_reason text check (cancel_reason in
        ('too_expensive', 'not_using', 'missing_features', 'quality', 'technical_issues', 'switched_service', 'other')),
      cancel_comment text,
      ended_at timestamptz,
      -- For operators: why it ended (canceled, payment_expired, not_registered, renewal_declined, payment_refunded).
      ended_reason text,
      next_action_at timestamptz,
      created_at timestamptz not null default now()
    )`);
  await knex.raw('create index subscriptions_by_user on subscriptions (user_id, created_at desc, id desc)');
  await knex.raw('create index subscriptions_due on subscriptions (next_action_at) where next_action_at is not null');
  await knex.raw(`create unique index subscriptions_one_live_per_plan on subscriptions (user_id, plan_id)
    where status in ('pending', 'active', 'past_due')`);

  await knex.raw('alter table payments alter column product_id drop not null');
  await knex.raw(`
    alter table payments
      add column plan_id uuid references subscription_plans (id),
      add column subscription_id uuid references subscriptions (id) on delete cascade,
      add column period integer,
      add column attempt integer,
      add constraint payments_sells_one check (num_nonnulls(product_id, plan_id) = 1),
      add constraint payments_period_of_subscription check ((subscription_id is null) = (period is null) and (period is null) = (attempt is null))`);
  await knex.raw('create unique index payments_one_per_attempt on payments (subscription_id, period, attempt) where subscription_id is not null');
  await knex.raw('alter table subscriptions add constraint subscriptions_payment foreign key (payment_id) references payments (id)');

  await knex.raw('alter table offers alter column product_id drop not null');
  await knex.raw(`
    alter table offers
      add column plan_id uuid references subscription_plans (id),
      add constraint offers_sell_one check (num_nonnulls(product_id, plan_id) = 1)`);

  await knex.raw(`
    create table subscription_reminders (
      subscription_id uuid not null references subscriptions (id) on delete cascade,
      period integer not null,
      days_left integer not null,
      sent_at timestamptz not null default now(),
      primary key (subscription_id, period, days_left)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop table subscription_reminders');
  await knex.raw('alter table offers drop constraint offers_sell_one, drop column plan_id');
  await knex.raw('alter table offers alter column product_id set not null');
  await knex.raw('alter table subscriptions drop constraint subscriptions_payment');
  await knex.raw('drop index payments_one_per_attempt');
  await knex.raw(`alter table payments drop constraint payments_period_of_subscription, drop constraint payments_sells_one,
    drop column attempt, drop column period, drop column subscription_id, drop column plan_id`);
  await knex.raw('alter table payments alter column product_id set not null');
  await knex.raw('drop table subscriptions');
  await knex.raw('drop table subscription_plans');
}
