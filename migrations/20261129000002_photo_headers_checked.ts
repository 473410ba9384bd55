import type { Knex } from 'knex';

/**
 * The API read each photo's header as it took the request and found every one a usable image
 * (`api/generations/create.ts`): the dispatcher submits the generation without reading them again,
 * one object-store read less between the request and the provider. Unlike `inputs_checked_at`
 * (the check ahead of the slot, which also stages the photos with the provider), it stages nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table generations add column photo_headers_checked boolean not null default false');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table generations drop column photo_headers_checked');
}
