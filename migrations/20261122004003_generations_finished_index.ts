import type { Knex } from 'knex';

/**
 * `GET /metrics` counts the generations that became terminal since its previous scrape (by
 * `finished_at`); this index keeps that a range read instead of a scan of the whole history.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index generations_finished on generations (finished_at) where finished_at is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index generations_finished');
}
