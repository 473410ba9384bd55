import type { Knex } from 'knex';

/**
 * Generations and their state machine (the contract): pending -> processing -> succeeded | failed.
 * Every transition is a guarded update (`where status = <expected>`), see api/generations/transitions.
 * Columns that only the pipeline reads (claims, provider task, result object) live here too, so one
 * row tells the whole story of a generation.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    create table generations (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      -- No foreign key: a generation keeps its history whatever the catalog does with the effect.
      effect_id uuid not null,
      status text not null,
      cost integer not null,
      output_type text not null,
      model text not null,
      -- [{upload_id, object_key, person}] in the order sent to the provider.
      inputs jsonb not null,
      error_code text,
      -- The generation-submit job that carries it through the FIFO queue.
      submit_job_id uuid,
      -- A worker is submitting it until then; a claim past its time is a crashed worker's.
      dispatch_until timestamptz,
      dispatch_attempts integer not null default 0,
      provider_account_id integer,
      provider_task_id text,
      -- The poll loop's schedule; also its claim while a worker polls (pushed forward by the claim).
      next_poll_at timestamptz,
      poll_count integer not null default 0,
      result_key text,
      result_content_type text,
      result_stored_at timestamptz,
      preview jsonb,
      hidden_at timestamptz,
      created_at timestamptz not null default now(),
      started_at timestamptz,
      finished_at timestamptz,
      constraint generations_status check (status in ('pending', 'processing', 'succeeded', 'failed')),
      constraint generations_output_type check (output_type in ('image', 'video')),
      constraint generations_cost_positive check (cost > 0),
      constraint generations_error_only_when_failed check ((status = 'failed') = (error_code is not null))
    )`);
  // The user's history, newest first, without hidden ones.
  await knex.raw('create index generations_user_newest on generations (user_id, created_at desc, id desc) where hidden_at is null');
  // Pending expiry and the queue-size check read only the pending ones.
  await knex.raw("create index generations_pending on generations (created_at) where status = 'pending'");
  // The poll loop claims due tasks in order.
  await knex.raw("create index generations_due_polls on generations (next_poll_at) where status = 'processing' and next_poll_at is not null");
  // Results waiting for their preview copy (the media sweep's safety net).
  await knex.raw("create index generations_awaiting_media on generations (result_stored_at) where status = 'processing' and result_key is not null");
  // scripts/replay-failed.ts selects failures by time and code.
  await knex.raw("create index generations_failed on generations (finished_at) where status = 'failed'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('generations');
}
