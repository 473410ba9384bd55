import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { providerKinds, type ProviderKind } from '../common/model-route';
import { queueNames, submitQueueOf, type QueueName } from './queues';

export interface QueueSize {
  queue: string;
  /** Jobs that may start now. */
  waiting: number;
  /** Jobs whose start is later (retries with backoff, scheduled jobs). */
  deferred: number;
  /** Seconds the oldest waiting job has been startable; 0 when none waits. */
  oldest_age_s: number;
}

/**
 * Waiting, deferred and oldest-waiting per queue, every queue of `db/queues.ts` included (at 0).
 * A generation line (`generation-submit.<kind>`) is its kind's waiting generations, from
 * `generations` through the index of the line (a waiting generation's ticket is its place, and a
 * line is never deferred); every other queue's jobs are read through pg-boss's own `findJobs`
 * (its queued jobs only), never its tables. `/metrics` and the operator console read it.
 */
export async function readQueueSizes(db: Knex, boss: PgBoss): Promise<QueueSize[]> {
  const lines = new Set<string>(providerKinds.map(submitQueueOf));
  const [waitingGenerations, others] = await Promise.all([
    db.raw<{ rows: { kind: ProviderKind; waiting: number; oldest_age_s: number }[] }>(
      `select provider_kind as kind, count(*)::integer as waiting, extract(epoch from now() - min(created_at))::float8 as oldest_age_s
       from generations where status = 'pending' and dispatch_until is null group by provider_kind`,
    ),
    Promise.all(queueNames.filter((queue) => !lines.has(queue)).map((queue) => sizeOfQueue(boss, queue))),
  ]);
  const byLine = new Map<string, { waiting: number; oldest_age_s: number }>(waitingGenerations.rows.map((row) => [submitQueueOf(row.kind), row]));
  return queueNames.map((queue) => {
    if (!lines.has(queue)) return others.find((size) => size.queue === queue)!;
    const line = byLine.get(queue);
    return { queue, waiting: line?.waiting ?? 0, deferred: 0, oldest_age_s: Math.max(0, line?.oldest_age_s ?? 0) };
  });
}

async function sizeOfQueue(boss: PgBoss, queue: QueueName): Promise<QueueSize> {
  const now = Date.now();
  const queued = await boss.findJobs(queue, { queued: true });
  const startable = queued.filter((job) => job.startAfter.getTime() <= now);
  const oldest = Math.min(...startable.map((job) => job.startAfter.getTime()));
  return {
    queue,
    waiting: startable.length,
    deferred: queued.length - startable.length,
    oldest_age_s: startable.length ? Math.max(0, (now - oldest) / 1000) : 0,
  };
}
