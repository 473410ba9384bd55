import type { Knex } from 'knex';

/**
 * Studio categories (docs/mobile.md, "Studio, voice input, queue position and cancel"): the tasks of the studio, an operator-editable table like the
 * catalog's categories. A task takes a prompt and `min_photos`..`max_photos` photos, costs `cost`
 * credits and runs on the provider model `model`; `output_type` is `image` or `text`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table studio_categories (
      id uuid primary key default gen_random_uuid(),
      slug text not null unique,
      name_ru text not null,
      name_en text not null,
      description_ru text not null default '',
      description_en text not null default '',
      output_type text not null,
      cost integer not null,
      min_photos integer not null,
      max_photos integer not null,
      model text not null,
      -- The operator's order of GET /v1/studio/categories.
      position integer not null default 0,
      enabled boolean not null default true,
      created_at timestamptz not null default now(),
      constraint studio_categories_output_type check (output_type in ('image', 'text')),
      constraint studio_categories_cost_positive check (cost > 0),
      constraint studio_categories_photos check (min_photos >= 0 and max_photos >= min_photos and max_photos <= 4)
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('studio_categories');
}
