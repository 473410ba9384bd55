import type { Knex } from 'knex';

/**
 * The marketplace of user effects (docs/mobile.md, "The marketplace of user effects"): the user effect (a prompt and a sample photo
 * of a registered user), its moderation rounds, the catalog effect made from it, and the author's
 * earnings. A moderation round is a job in the worker fleet holding a provider slot like any task,
 * so a slot may now be held by a user effect instead of a generation.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table user_effects (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      status text not null check (status in ('processing', 'approved', 'rejected', 'archived', 'private')),
      visibility text not null check (visibility in ('public', 'private')),
      -- The catalog effect made from it: null until its first moderation ends.
      effect_id uuid unique references effects (id) on delete set null,
      name text not null,
      description text not null default '',
      prompt text not null,
      output_type text not null check (output_type in ('image', 'video')),
      characters jsonb not null,
      cost integer not null check (cost > 0),
      -- The sample photo as uploaded (its object key: the upload row may go, the photo stays).
      sample_key text not null,
      -- Preview copies of the sample (media role), as object keys: null until built, or for a sample that is no photo.
      poster_key text,
      preview jsonb,
      rejection_reason text check (rejection_reason in ('content_policy', 'bad_sample')),
      -- Each submission and each publish is a new round; jobs carry their round, so a late job of an old one changes nothing.
      moderation_round integer not null default 1,
      -- The moderation model's verdict of the current round, kept until the preview exists and the status moves on.
      verdict text check (verdict in ('approved', 'rejected')),
      verdict_reason text check (verdict_reason in ('content_policy', 'bad_sample')),
      rejected_at timestamptz,
      archived_by text check (archived_by in ('author', 'operator')),
      archive_reason text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    )`);
  await knex.raw('create index user_effects_by_user on user_effects (user_id, created_at desc, id desc)');
  // The submission limits read these: the author's waiting ones, and their rejections of the last days.
  await knex.raw("create index user_effects_processing on user_effects (user_id) where status = 'processing'");
  await knex.raw('create index user_effects_rejections on user_effects (user_id, rejected_at) where rejected_at is not null');

  // An effect made from a private user effect (or one waiting for moderation again) is its author's only.
  await knex.raw('alter table effects add column private_to uuid references users (id) on delete cascade');

  await knex.raw(`
    create table user_effect_earnings (
      id uuid primary key default gen_random_uuid(),
      user_effect_id uuid not null references user_effects (id) on delete cascade,
      effect_id uuid not null references effects (id) on delete cascade,
      -- One earning per generation: the success that makes it happens once.
      generation_id uuid not null unique references generations (id) on delete cascade,
      user_id uuid not null references users (id) on delete cascade,
      amount integer not null check (amount > 0),
      status text not null check (status in ('pending', 'settled', 'reversed')),
      settles_at timestamptz not null,
      settled_at timestamptz,
      reversed_at timestamptz,
      created_at timestamptz not null default now()
    )`);
  await knex.raw('create index user_effect_earnings_by_user on user_effect_earnings (user_id, created_at desc, id desc)');
  await knex.raw("create index user_effect_earnings_due on user_effect_earnings (settles_at) where status = 'pending'");
  await knex.raw("create index user_effect_earnings_pending_by_effect on user_effect_earnings (user_effect_id) where status = 'pending'");

  await knex.raw('alter table provider_slots add column user_effect_id uuid references user_effects (id) on delete set null');
  await knex.raw('alter table provider_slots add constraint provider_slots_one_holder check (generation_id is null or user_effect_id is null)');
  await knex.raw('create index provider_slots_user_effect on provider_slots (user_effect_id) where user_effect_id is not null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table provider_slots drop column user_effect_id');
  await knex.schema.dropTable('user_effect_earnings');
  await knex.raw('alter table effects drop column private_to');
  await knex.schema.dropTable('user_effects');
}
