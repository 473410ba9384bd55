import type { Knex } from 'knex';

/**
 * Photo checks ahead of the slot: while every provider slot is busy, workers read the headers of the
 * waiting generations' photos, so a broken or oversized photo fails at once instead of at the head of
 * the line, and a checked generation is submitted without reading its photos again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table generations
      add column inputs_checked_at timestamptz,
      -- A worker is checking the photos until then (a claim, like dispatch_until).
      add column checking_until timestamptz`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table generations drop column inputs_checked_at, drop column checking_until');
}
