import type { Knex } from 'knex';

/**
 * What runs an effect or a studio category on each kind of provider (`common/model-route.ts`):
 * `{"replicate": {model, input, output}, "fal": {...}, "simulator": {...}}`. Null: only the
 * simulator, on the model named by `model`.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table effects add column runs jsonb');
  await knex.raw('alter table studio_categories add column runs jsonb');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table effects drop column runs');
  await knex.raw('alter table studio_categories drop column runs');
}
