import type { JobWithMetadata } from 'pg-boss';
import type { QueueName, QueuePayloads } from '../db/queues';
import { services } from './harness';

/**
 * A queue's jobs as pg-boss answers them (`findJobs`), oldest first: tests read and change jobs
 * through pg-boss's API only, never its tables. `where` keeps the jobs whose data holds it.
 */
export async function jobsOf<Q extends QueueName>(queue: Q, where: Partial<Record<string, unknown>> = {}): Promise<JobWithMetadata<QueuePayloads[Q]>[]> {
  const jobs = await services().boss.findJobs<QueuePayloads[Q]>(queue);
  return jobs
    .filter((job) => Object.entries(where).every(([key, value]) => (job.data as Record<string, unknown>)[key] === value))
    .sort((one, other) => one.createdOn.getTime() - other.createdOn.getTime());
}

/** The data of a queue's jobs, oldest first. */
export async function jobDataOf<Q extends QueueName>(queue: Q, where: Partial<Record<string, unknown>> = {}): Promise<QueuePayloads[Q][]> {
  return (await jobsOf(queue, where)).map((job) => job.data);
}
