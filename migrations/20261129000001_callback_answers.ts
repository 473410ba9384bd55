import type { Knex } from 'knex';

/**
 * What a finished task's callback said, kept for the poll it makes due (`record-task-callback.ts`):
 * that poll reads it instead of asking the provider, and takes it off the row as it claims the task
 * (`claim-due-polls.ts`), so a retry asks the provider again. Only the fields a poll reads, at most
 * 16 KB (`clients/providers/provider-webhooks.ts`).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table generations add column callback_answer jsonb');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table generations drop column callback_answer');
}
