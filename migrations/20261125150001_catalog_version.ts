import type { Knex } from 'knex';

/**
 * The catalog version: every transaction that changes what the public catalog shows
 * takes the next value of `catalog_version` once and announces it with
 * `NOTIFY catalog_changed, '{"version": n}'` (delivered at commit, never for a rollback), so every
 * web process drops its cached catalog answers within milliseconds (`api/catalog/catalog-cache.ts`).
 *
 * Triggers do it, so no writer can forget: inserts, updates, deletes and truncates of effects,
 * categories, their links, tags, their links and authors. One exception: an update of an effect that
 * only counts a success (`success_count`, `updated_at`, once per succeeded generation) bumps nothing;
 * the popularity it feeds is refreshed by the cache's time limit instead.
 *
 * A sequence, not a row: truncating the tables (tests do) never turns the version back, and writers
 * never wait on each other's row lock.
 */
const tables = ['effects', 'categories', 'effect_categories', 'tags', 'effect_tags', 'authors'];

export async function up(knex: Knex): Promise<void> {
  await knex.raw('create sequence catalog_version');
  // Once per transaction: a transaction-local setting remembers the bump (it reverts at the end,
  // and with a rolled-back savepoint, which then bumps again on its next change).
  await knex.raw(`
    create function bump_catalog_version() returns trigger language plpgsql as $$
    begin
      if current_setting('catalog.version_bumped', true) is distinct from 'on' then
        perform set_config('catalog.version_bumped', 'on', true);
        perform pg_notify('catalog_changed', json_build_object('version', nextval('catalog_version'))::text);
      end if;
      return null;
    end $$`);
  for (const table of tables) {
    const changes = table === 'effects' ? 'insert or delete' : 'insert or update or delete';
    await knex.raw(`create trigger ${table}_catalog_changed after ${changes} on ${table}
      for each statement execute function bump_catalog_version()`);
    await knex.raw(`create trigger ${table}_catalog_truncated after truncate on ${table}
      for each statement execute function bump_catalog_version()`);
  }
  await knex.raw(`create trigger effects_catalog_changed_row after update on effects for each row
    when ((to_jsonb(old) - 'success_count' - 'updated_at') is distinct from (to_jsonb(new) - 'success_count' - 'updated_at'))
    execute function bump_catalog_version()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop trigger effects_catalog_changed_row on effects');
  for (const table of tables) {
    await knex.raw(`drop trigger ${table}_catalog_changed on ${table}`);
    await knex.raw(`drop trigger ${table}_catalog_truncated on ${table}`);
  }
  await knex.raw('drop function bump_catalog_version()');
  await knex.raw('drop sequence catalog_version');
}
