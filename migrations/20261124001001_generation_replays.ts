import type { Knex } from 'knex';

/**
 * `npm run replay-failed` replays a failed generation at most once: the new attempt's id is kept on
 * the failed one, set in the same transaction that creates the attempt (`db/generations/record-replay.ts`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table generations add column replayed_as uuid references generations (id) on delete set null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table generations drop column replayed_as');
}
