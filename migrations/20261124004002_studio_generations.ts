import type { Knex } from 'knex';

/**
 * Studio generations are rows of the same `generations` table (one pipeline): `kind` tells an
 * effect generation from a studio one, which names its studio category instead of an effect and
 * carries its prompt; a text task keeps its answer in `result_text` instead of a result file.
 *
 * `generations_waiting` is the line of generations waiting for a slot, in the order the dispatcher
 * serves it (a generation's `generation-submit` ticket is created in the same transaction, so it
 * carries the same `created_on`): `queue_position` counts the entries ahead in it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table generations
      add column kind text not null default 'effect',
      add column studio_category_id uuid,
      add column prompt text,
      add column result_text text,
      alter column effect_id drop not null,
      drop constraint generations_output_type,
      add constraint generations_output_type check (output_type in ('image', 'video', 'text')),
      add constraint generations_kind check (
        (kind = 'effect' and effect_id is not null and studio_category_id is null)
        or (kind = 'studio' and studio_category_id is not null and effect_id is null and prompt is not null))`);
  await knex.raw("create index generations_waiting on generations (created_at, id) where status = 'pending' and dispatch_until is null");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index generations_waiting');
  await knex.raw("delete from generations where kind <> 'effect'");
  await knex.raw(`
    alter table generations
      drop constraint generations_kind,
      drop constraint generations_output_type,
      add constraint generations_output_type check (output_type in ('image', 'video')),
      alter column effect_id set not null,
      drop column result_text,
      drop column prompt,
      drop column studio_category_id,
      drop column kind`);
}
