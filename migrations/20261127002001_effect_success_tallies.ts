import type { Knex } from 'knex';

/**
 * Successes are tallied, not counted on the effect's row: each succeeded generation used to add 1 to
 * `effects.success_count` in its own transaction, so every success of one effect waited for the
 * previous one's commit on that one row (a popular effect serialized its completions across every
 * media process). A success now inserts a tally row (no row is shared, so nothing waits); the
 * scheduler moves the tallies into `success_count` every few seconds
 * (`db/generations/roll-up-success-counts.ts`). Popularity already lags by the catalog cache's time
 * limit; this adds seconds.
 *
 * No foreign key: it would lock the effect's row for key share on each insert, and the roll-up
 * drops the tallies of a deleted effect anyway.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create table effect_success_tallies (
    id bigint generated always as identity primary key,
    effect_id uuid not null
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`update effects e set success_count = e.success_count + t.successes
    from (select effect_id, count(*)::integer as successes from effect_success_tallies group by effect_id) t
    where e.id = t.effect_id`);
  await knex.raw('drop table effect_success_tallies');
}
