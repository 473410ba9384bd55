import type { Knex } from 'knex';

/**
 * The provider kind an account speaks (`common/model-route.ts`: simulator, replicate, fal), kept by
 * the sync of the configuration (`pool/accounts.ts`): a generation waits for a slot of an account of
 * its own kind only. Accounts from before were the simulator's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw("alter table provider_accounts add column kind text not null default 'simulator'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table provider_accounts drop column kind');
}
