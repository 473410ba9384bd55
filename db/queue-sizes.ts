import type { Knex } from 'knex';
import { queueNames } from './queues';

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
 * Waiting, deferred and oldest-waiting per queue, every queue of `db/queues.ts` included (at 0),
 * from pg-boss's partial index of queued jobs. `/metrics` and the operator console read it.
 */
export async function readQueueSizes(db: Knex): Promise<QueueSize[]> {
  const { rows } = await db.raw<{ rows: { queue: string; waiting: number; deferred: number; oldest_age_s: number | null }[] }>(
    `select name as queue,
       count(*) filter (where start_after <= now()) as waiting,
       count(*) filter (where start_after > now()) as deferred,
       extract(epoch from now() - min(start_after) filter (where start_after <= now()))::float8 as oldest_age_s
     from pgboss.job where state < 'active' group by name`,
  );
  const byQueue = new Map(rows.map((row) => [row.queue, row]));
  return [...new Set<string>([...queueNames, ...byQueue.keys()])].map((queue) => {
    const row = byQueue.get(queue);
    return { queue, waiting: row?.waiting ?? 0, deferred: row?.deferred ?? 0, oldest_age_s: Math.max(0, row?.oldest_age_s ?? 0) };
  });
}
