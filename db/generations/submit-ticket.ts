import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { bossIn, enqueue } from '../queues';

/**
 * The `generation-submit` job of a pending generation: its place in the FIFO line (the dispatcher takes
 * tickets by `created_on`, as pg-boss fetches). A job that has to wait again is failed into `retry`, which keeps its
 * `created_on` and so its place (`db/queues.ts` makes its retries practically unlimited).
 */
interface CommandResult {
  affected: number;
}

/** The first ticket of a generation carries the generation's own id, so the row can name it up front. */
export async function sendSubmitJob(boss: PgBoss, trx: Knex.Transaction, generationId: string, jobId: string = generationId): Promise<string> {
  const id = await enqueue(boss, trx, 'generation-submit', { generationId }, { id: jobId });
  if (!id) throw new Error(`generation-submit job ${jobId} was not created for ${generationId}`);
  return id;
}

/**
 * The tickets named by `source`'s `submit_job_id` end, as pg-boss's `complete` ends a started job
 * (`completed`) and its `cancel` one that never started (`cancelled`), whatever state each is in: an
 * UPDATE for a transition's own statement (`mark-processing.ts`), or for `finishSubmitJob`. It writes
 * pg-boss's job table like the dispatcher's claim, whose version package.json pins.
 */
export function finishTicketsOf(source: string): string {
  return `update pgboss.job j
    set state = (case when j.state = 'active' then 'completed' else 'cancelled' end)::pgboss.job_state, completed_on = pgboss.job_now()
    from ${source} finished
    where j.name = 'generation-submit' and j.id = finished.submit_job_id and j.state < 'completed'`;
}

/** The generation left `pending` (submitted or failed): its ticket is done, whatever state it is in. */
export async function finishSubmitJob(trx: Knex.Transaction, jobId: string): Promise<void> {
  await trx.raw(`with ticket as (select :jobId::uuid as submit_job_id) ${finishTicketsOf('ticket')}`, { jobId });
}

/**
 * Puts the ticket back in line at its old place (provider busy or unreachable, no slot after all,
 * or a crashed worker's claim). Answers false when there was no such job to put back.
 */
export async function returnSubmitJob(boss: PgBoss, trx: Knex.Transaction, jobId: string): Promise<boolean> {
  const db = bossIn(trx);
  const failed = (await boss.fail('generation-submit', jobId, null, { db })) as unknown as CommandResult;
  if (failed.affected > 0) return true;
  const retried = (await boss.retry('generation-submit', jobId, { db })) as unknown as CommandResult;
  return retried.affected > 0;
}

/**
 * Locks a waiting generation's ticket without waiting, before the generation's own row is changed.
 * A dispatcher locks the ticket first (`claim-next-with-slots.ts`, `for update skip locked`) and
 * claims the generation second; taking the two in the same order cannot deadlock with it, and while the lock is
 * held the dispatchers skip the ticket. False when a dispatcher holds it at this moment (it is taking
 * the generation); true when it is locked now or is not there (no ticket to race for).
 */
export async function lockTicketUnlessTaken(trx: Knex.Transaction, jobId: string | null): Promise<boolean> {
  if (!jobId) return true;
  const ticket = "from pgboss.job where name = 'generation-submit' and id = :jobId";
  const locked = await trx.raw<{ rows: unknown[] }>(`select id ${ticket} for update skip locked`, { jobId });
  if (locked.rows.length) return true;
  const present = await trx.raw<{ rows: unknown[] }>(`select id ${ticket}`, { jobId });
  return present.rows.length === 0;
}
