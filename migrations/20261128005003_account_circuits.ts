import type { Knex } from 'knex';

/**
 * A circuit per provider account, beside its cooldown: `failures` counts the calls in a row that got
 * no answer from the provider (a timeout, a refused or cut connection, a 5xx), `retry_at` is when the
 * account is tried again (backing off with each failure; no submission before it), and
 * `circuit_opened_at` is set once the failures reach the threshold (no submission, polls deferred,
 * one probe at `retry_at`) until the provider answers again. Each is changed by one guarded
 * statement (`db/pool/record-account-*.ts`, `claim-account-probe.ts`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table provider_accounts
    add column failures integer not null default 0,
    add column retry_at timestamptz,
    add column circuit_opened_at timestamptz`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table provider_accounts drop column failures, drop column retry_at, drop column circuit_opened_at');
}
