import type { Job } from 'pg-boss';
import { isOutage } from '../../common/circuit';
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

/**
 * A queue whose jobs are handled a batch at a time: a round fetches `batchSize` jobs per free slot,
 * each batch goes to `handleBatch` whole, and the jobs it did not answer as failed are completed in
 * one statement (the others failed one by one, for pg-boss to retry). Fewer round trips per job for
 * a queue of many small jobs whose handler can read or write for many at once. No heartbeats.
 */
export interface BatchQueueConsumer<Q extends QueueName> extends Omit<QueueConsumer<Q>, 'handle' | 'cron'> {
  /** Batches handled at once in this process. */
  concurrency: number;
  /** Jobs per batch, at most. */
  batchSize: number;
  /** Handles the batch; answers why each failed job failed (a throw fails the whole batch). */
  handleBatch(jobs: Job<QueuePayloads[Q]>[]): Promise<Map<string, Error>>;
}

const defaultIdleMs = 2000;
/** Within the 25 s a process gets to stop, so a stop during an outage still ends in time. */
const settleBudgetMs = 15_000;

/**
 * Records a job's failure for pg-boss to retry, across a database blip; logs what it could not
 * record. A job that failed on an outside service's outage is not a warning of its own: that
 * service's circuit warns once when it opens (`common/circuit.ts`), however many jobs it fails.
 */
async function failJob(services: Services, queue: QueueName, jobId: string, error: Error): Promise<void> {
  const { boss, log } = services;
  log[isOutage(error) ? 'info' : 'warn']({ err: error, queue, jobId }, `${queue} job failed; pg-boss retries it`);
  await untilReachable(() => boss.fail(queue, jobId, { message: error.message }), settleBudgetMs)
    .catch((unrecorded: unknown) => log.warn({ err: unrecorded, queue, jobId }, `${queue} job failure not recorded; the job expires instead`));
}

export async function startQueueConsumer<Q extends QueueName>(services: Services, consumer: QueueConsumer<Q>): Promise<RunningLoop> {
  const { boss } = services;
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
        await failJob(services, queue, job.id, error as Error);
        return;
      } finally {
        if (heartbeat) clearInterval(heartbeat);
      }
      if (handled !== 'completed') await untilReachable(() => boss.complete(queue, job.id), settleBudgetMs);
    },
  });
}

export async function startBatchQueueConsumer<Q extends QueueName>(services: Services, consumer: BatchQueueConsumer<Q>): Promise<RunningLoop> {
  const { boss } = services;
  const { queue, batchSize } = consumer;
  return startJobLoop(services, {
    name: queue,
    concurrency: consumer.concurrency,
    idleMs: consumer.idleMs ?? defaultIdleMs,
    wakeOn: consumer.wakeOn,
    claim: async (room) => {
      if (room === 0) return [];
      const jobs = await boss.fetch<QueuePayloads[Q]>(queue, { batchSize: room * batchSize });
      return Array.from({ length: Math.ceil(jobs.length / batchSize) }, (_, index) => jobs.slice(index * batchSize, (index + 1) * batchSize));
    },
    handle: async (jobs) => {
      let failed: Map<string, Error>;
      try {
        failed = await consumer.handleBatch(jobs);
      } catch (error) {
        failed = new Map(jobs.map((job) => [job.id, error as Error]));
      }
      await Promise.all(jobs.filter((job) => failed.has(job.id)).map((job) => failJob(services, queue, job.id, failed.get(job.id)!)));
      const done = jobs.filter((job) => !failed.has(job.id)).map((job) => job.id);
      if (done.length > 0) await untilReachable(() => boss.complete(queue, done), settleBudgetMs);
    },
  });
}
