import type { Services } from '../services';

/**
 * The queue's ceiling on this machine, the baseline of the pipeline benchmarks: `count` no-op jobs
 * inserted in batches and completed by 8 work() loops of batch 200, on the same database.
 * Answers jobs per second.
 */
export async function pgBossThroughput(services: Services, count: number): Promise<number> {
  const { boss } = services;
  const queue = 'bench-noop';
  if (!(await boss.getQueue(queue))) await boss.createQueue(queue);
  await boss.deleteQueuedJobs(queue);
  for (let start = 0; start < count; start += 1000) {
    await boss.insert(queue, Array.from({ length: Math.min(1000, count - start) }, (_, index) => ({ data: { index: start + index } })));
  }
  let done = 0;
  const started = Date.now();
  const finished = new Promise<void>((resolve) => {
    const handler = async (jobs: unknown[]) => {
      done += jobs.length;
      if (done >= count) resolve();
    };
    for (let loop = 0; loop < 8; loop += 1) void boss.work(queue, { batchSize: 200, pollingIntervalSeconds: 0.5 }, handler);
  });
  await finished;
  const seconds = (Date.now() - started) / 1000;
  await boss.offWork(queue);
  return count / seconds;
}
