import type { Knex } from 'knex';

/**
 * When a task callback last freed the slot (`db/generations/record-task-callback.ts`): while a slot
 * has a recent one, the provider's callbacks reach us and running tasks are polled only as a
 * fallback for a lost callback (`db/generations/schedule-poll.ts`). Written by the statement that
 * frees the slot anyway, so it costs no write of its own.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table provider_slots add column called_back_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table provider_slots drop column called_back_at');
}
