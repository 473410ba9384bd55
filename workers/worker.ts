import { stopAll, type RunningPart, type Services } from '../api/services';

/**
 * The `worker` role: the generation pipeline's provider side (lease a slot, submit, poll, finish,
 * refund) and the small jobs that go with it. Any number of copies may run against one database.
 */
export async function startWorker(services: Services): Promise<RunningPart> {
  const parts: RunningPart[] = [];
  services.log.info({ role: 'worker', parts: parts.length }, 'role started');
  return stopAll(parts);
}
