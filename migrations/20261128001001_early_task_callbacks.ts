import type { Knex } from 'knex';

/**
 * A provider's callback can come before the submission is recorded: the task ended before the
 * provider's answer reached the database (a short task, or the simulator at latency 0). The task it
 * named is kept on the pending generation (`early_callback_task_id`,
 * `db/generations/record-task-callback.ts`); recording the submission of that very task makes its
 * first poll due at once (`db/generations/mark-processing.ts`). Before, such a callback was answered
 * `503` and came again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table generations add column early_callback_task_id text');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table generations drop column early_callback_task_id');
}
