import type { Knex } from 'knex';

/**
 * The photos of a waiting generation as staged with the provider ahead of its slot
 * (`workers/generations/dispatcher.ts`): the provider's own links, sent instead of ours so that the
 * task starts without downloading them, while the provider keeps them (`staged_inputs_until`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table generations add column staged_inputs jsonb, add column staged_inputs_until timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table generations drop column staged_inputs, drop column staged_inputs_until');
}
