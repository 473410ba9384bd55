import type { Knex } from 'knex';

/**
 * When the provider called back to say a generation's task finished (`task_callback_at`): recorded
 * once, so a replayed callback changes nothing (`db/generations/record-task-callback.ts`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table generations add column task_callback_at timestamptz');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table generations drop column task_callback_at');
}
