import { revokeRefreshToken } from '../../clients/identity/idp-b-tokens';
import { unseal } from '../../db/accounts/sealed-secret';
import type { QueuePayloads } from '../../db/queues';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';

/**
 * Revokes an idp_b grant of a deleted account (enqueued by the deletion, never awaited by it). An
 * unreachable or failing idp_b throws, so the job is retried with backoff (`db/queues.ts`); while
 * idp_b's circuit is open it throws at once, without calling.
 */
export async function revokeIdpBGrant(services: Services, job: QueuePayloads['revoke-idp-b']): Promise<void> {
  const { config, log } = services;
  const outcome = await revokeRefreshToken(services, unseal(config.tokenSecret, job.sealedRefreshToken));
  log.info({ outcome }, 'idp_b grant revoked');
}

/** Works the `revoke-idp-b` queue, one grant at a time. */
export async function startIdpBRevocation(services: Services): Promise<RunningPart> {
  return startQueueConsumer(services, {
    queue: 'revoke-idp-b',
    concurrency: 1,
    handle: (job) => revokeIdpBGrant(services, job.data),
  });
}
