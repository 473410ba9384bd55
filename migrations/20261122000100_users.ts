import type { Knex } from 'knex';

/** Accounts: one `id` for life, also when a guest becomes a full account. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create extension if not exists pgcrypto');
  await knex.schema.createTable('users', (table) => {
    table.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    table.boolean('is_anonymous').notNullable();
    table.text('email');
    table.text('name');
    table.text('locale').notNullable().defaultTo('ru');
    table.integer('balance').notNullable().defaultTo(0);
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    table.timestamp('last_sign_in_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // The balance can never go negative: a constraint, not only code.
  await knex.raw('alter table users add constraint users_balance_not_negative check (balance >= 0)');
  await knex.raw('create unique index users_email_unique on users (lower(email)) where email is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('users');
}
