import type { Job } from 'pg-boss';
import type { QueueName, QueuePayloads } from '../../db/queues';
import { untilReachable } from '../../db/unreachable';
import type { Services } from '../../services';
import { startJobLoop, type RunningLoop, type WakeOn } from './job-loop';

/**
 * A pg-boss queue worked on the job loop: each round fetches as many jobs as there is room for
 * (pg-boss hands them out oldest first and marks them active), each job is handled on its own and
 * then completed, or failed when its handler throws (pg-boss retries it as its queue says,
 * `db/queues.ts`). A job with `heartbeatSeconds` is touched while it is handled, three times per
 * heartbeat. A job's end is recorded even across a database blip (tried again until the database
 * answers, within `settleBudgetMs`): a job left active by a blip would wait for its expiry.
 * A consumer with `cron` also schedules its queue (pg-boss fires each schedule once, however many
 * processes run it).
 */
export interface QueueConsumer<Q extends QueueName> {
  queue: Q;
  /** Jobs handled at once in this process. */
  concurrency: number;
  /** How often the queue is looked at without a wake-up; 2 s (pg-boss's own default) when absent. */
  idleMs?: number;
  wakeOn?: WakeOn[];
  cron?: string;
  /**
   * Handles one job. Resolving completes it; `'completed'` says the handler completed it itself,
   * inside the transaction of what the job did (so a crash leaves both undone).
   */
  handle(job: Job<QueuePayloads[Q]>): Promise<void | 'completed'>;
}

const defaultIdleMs = 2000;
/** Within the 25 s a process gets to stop, so a stop during an outage still ends in time. */
const settleBudgetMs = 15_000;

export async function startQueueConsumer<Q extends QueueName>(services: Services, consumer: QueueConsumer<Q>): Promise<RunningLoop> {
  const { boss, log } = services;
  const { queue } = consumer;
  if (consumer.cron) await boss.schedule(queue, consumer.cron);
  return startJobLoop(services, {
    name: queue,
    concurrency: consumer.concurrency,
    idleMs: consumer.idleMs ?? defaultIdleMs,
    wakeOn: consumer.wakeOn,
    claim: async (room) => (room > 0 ? boss.fetch<QueuePayloads[Q]>(queue, { batchSize: room }) : []),
    handle: async (job) => {
      let handled: void | 'completed';
      const heartbeat = job.heartbeatSeconds
        ? setInterval(() => void boss.touch(queue, job.id).catch(() => undefined), (job.heartbeatSeconds * 1000) / 3)
        : null;
      try {
        handled = await consumer.handle(job);
      } catch (error) {
        log.warn({ err: error, queue, jobId: job.id }, `${queue} job failed; pg-boss retries it`);
        await untilReachable(() => boss.fail(queue, job.id, { message: (error as Error).message }), settleBudgetMs)
          .catch((unrecorded: unknown) => log.warn({ err: unrecorded, queue, jobId: job.id }, `${queue} job failure not recorded; the job expires instead`));
        return;
      } finally {
        if (heartbeat) clearInterval(heartbeat);
      }
      if (handled !== 'completed') await untilReachable(() => boss.complete(queue, job.id), settleBudgetMs);
    },
  });
}
