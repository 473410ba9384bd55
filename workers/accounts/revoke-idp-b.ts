import { unseal } from '../../db/accounts/sealed-secret';
import type { QueuePayloads } from '../../db/queues';
import type { RunningPart, Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';

/**
 * Revokes an idp_b grant of a deleted account (enqueued by the deletion, never awaited by it). A 4xx
 * means idp_b no longer knows the token (revoked or expired): done. An unreachable or failing idp_b
 * throws, so the job is retried with backoff.
 */
export async function revokeIdpBGrant(services: Services, job: QueuePayloads['revoke-idp-b']): Promise<void> {
  const { config, log } = services;
  const { revokeUrl, clientId, clientSecret } = config.idp.b;
  if (!revokeUrl || !clientId || !clientSecret) throw new Error('idp_b revocation is not configured');
  const body = new URLSearchParams({ token: unseal(config.tokenSecret, job.sealedRefreshToken), token_type_hint: 'refresh_token', client_id: clientId, client_secret: clientSecret });
  const response = await fetch(revokeUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: body.toString(),
    redirect: 'error',
    signal: AbortSignal.timeout(config.idp.timeoutMs),
  }).catch(() => {
    throw new Error('idp_b did not answer the revocation');
  });
  await response.body?.cancel();
  if (response.status >= 500 || response.status === 429) throw new Error(`idp_b answered the revocation with HTTP ${response.status}`);
  log.info({ outcome: response.ok ? 'revoked' : 'unknown_token' }, 'idp_b grant revoked');
}

/** Works the `revoke-idp-b` queue, one grant at a time. */
export async function startIdpBRevocation(services: Services): Promise<RunningPart> {
  return startQueueConsumer(services, {
    queue: 'revoke-idp-b',
    concurrency: 1,
    handle: (job) => revokeIdpBGrant(services, job.data),
  });
}
