import type { Knex } from 'knex';

/**
 * A generation keeps the provider kind and the route (`common/model-route.ts`) it was started with,
 * so a later change of the catalog never changes a task in line; it waits in its kind's line
 * (`generation-submit.<kind>`), and its place is counted among the waiting generations of its kind:
 * the index of waiting generations leads with the kind. Generations from before ran on the simulator;
 * the waiting ones get the route their model named.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("alter table generations add column provider_kind text not null default 'simulator', add column route jsonb");
  await knex.raw("update generations set route = jsonb_build_object('model', model) where status = 'pending'");
  await knex.raw('drop index generations_waiting');
  await knex.raw("create index generations_waiting on generations (provider_kind, created_at, id) where status = 'pending' and dispatch_until is null");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index generations_waiting');
  await knex.raw("create index generations_waiting on generations (created_at, id) where status = 'pending' and dispatch_until is null");
  await knex.raw('alter table generations drop column provider_kind, drop column route');
}
