import type { Knex } from 'knex';

/**
 * Claims that name their process, so a dead process is noticed in seconds instead of when its
 * claims run out. Every process holds one Postgres session named `effects-process <uuid>` for its
 * whole life (`db/process-session.ts`); `process_is_alive(id)` says whether that session is there
 * (or whether Postgres itself started so recently that the sessions are still coming back).
 * - `claimed_by`: the process working on the generation now: submitting it (pending, with
 *   `dispatch_until`), polling it (processing, with `next_poll_at`) or building its preview
 *   (processing, result stored).
 * - `submission_account_id`: a submission was sent to the provider on this account and its answer
 *   is not recorded yet. Until it is, a task may exist there under the generation's id as client
 *   reference: recovery looks it up instead of submitting again.
 * - `media_job_id`: the `generation-media` job of the stored result, so the stuck-preview sweep can
 *   tell a job that is still being tried from one that gave up.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    alter table generations
      add column claimed_by uuid,
      add column submission_account_id integer,
      add column media_job_id uuid`);
  await knex.raw("create index generations_claimed on generations (claimed_by) where claimed_by is not null and status in ('pending', 'processing')");
  // pg_stat_activity shows every session's application_name to every role. Just after Postgres
  // started, every process is still opening its session again: nobody counts as dead yet.
  await knex.raw(`
    create function process_is_alive(process_id uuid) returns boolean language sql stable as $$
      select pg_postmaster_start_time() > now() - interval '15 seconds'
        or exists (select 1 from pg_stat_activity where application_name = 'effects-process ' || process_id::text)
    $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function process_is_alive(uuid)');
  await knex.raw('drop index generations_claimed');
  await knex.raw('alter table generations drop column claimed_by, drop column submission_account_id, drop column media_job_id');
}
