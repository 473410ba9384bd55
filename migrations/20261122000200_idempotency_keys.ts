import type { Knex } from 'knex';

/**
 * `Idempotency-Key`s, bound only to created objects. The primary key decides between concurrent
 * duplicates: the second insert waits for the first transaction and then conflicts.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (table) => {
    table.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    // The endpoint pair that shares a key space: generation + studio generation, payment + subscription.
    table.text('pair').notNullable();
    table.text('key').notNullable();
    table.text('endpoint').notNullable();
    table.text('fingerprint').notNullable();
    table.uuid('object_id').notNullable();
    table.integer('status_code').notNullable();
    // Set while the first request still waits on an outside party (payments): `409 request_in_progress`.
    table.timestamp('in_progress_until', { useTz: true });
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.primary(['user_id', 'pair', 'key']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
}
