import type { Knex } from 'knex';

/**
 * `GET /metrics` counts, at each scrape, the ledger charges and refunds and the payment status
 * changes since the previous scrape, and reads the open payments (`api/metrics-outcomes.ts`); these
 * indexes keep each of those a range read instead of a scan of the whole table. The ledger index is
 * partial: only the two kinds the metrics count.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("create index credit_transactions_charges on credit_transactions (created_at) where kind in ('reserve', 'refund')");
  await knex.raw('create index payments_status_changed on payments (status_changed_at)');
  await knex.raw("create index payments_open on payments (created_at) where status = 'created'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index payments_open');
  await knex.raw('drop index payments_status_changed');
  await knex.raw('drop index credit_transactions_charges');
}
