import { stopAll, type RunningPart, type Services } from '../services';
import { startPushSendJobs } from './push/push-send';
import { startProvider } from './generations/provider';
import { startGenerationWorker } from './generations/pipeline';
import { registerRevokeIdpB } from './accounts/revoke-idp-b';

/**
 * The `worker` role: the generation pipeline's provider side (lease a slot, submit, poll, finish,
 * refund) and the small jobs that go with it. Any number of copies may run against one database.
 */
export async function startWorker(services: Services): Promise<RunningPart> {
  const parts: RunningPart[] = [];
  parts.push(await startPushSendJobs(services));
  await registerRevokeIdpB(services.boss, services);
  const provider = await startProvider(services);
  parts.push(provider, await startGenerationWorker(services, provider.adapter));
  services.log.info({ role: 'worker', parts: parts.length }, 'role started');
  return stopAll(parts);
}
