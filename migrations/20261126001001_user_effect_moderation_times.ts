import type { Knex } from 'knex';

/**
 * The operator console's marketplace page (`api/ops/marketplace.ts`) lists the moderation queue
 * oldest first and the live user effects newest first. `submitted_at` is when the current
 * moderation round was asked for (the submission, or the latest publish from `private`);
 * `approved_at` when the user effect was last approved. Each list reads a partial index of its
 * status. Rows made before keep their best guess: the creation for a first round, the last change
 * otherwise (for an approved row, its approval: nothing else updates one).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table user_effects add column submitted_at timestamptz not null default now(), add column approved_at timestamptz');
  await knex.raw(`update user_effects set submitted_at = case when moderation_round = 1 then created_at else updated_at end,
    approved_at = case when status = 'approved' then updated_at end`);
  await knex.raw("create index user_effects_moderation_queue on user_effects (submitted_at, id) where status = 'processing'");
  await knex.raw("create index user_effects_live on user_effects (approved_at desc, id desc) where status = 'approved'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index user_effects_live');
  await knex.raw('drop index user_effects_moderation_queue');
  await knex.raw('alter table user_effects drop column approved_at, drop column submitted_at');
}
