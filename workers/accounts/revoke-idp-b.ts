import type { PgBoss } from 'pg-boss';
import { unseal } from '../../db/accounts/sealed-secret';
import type { QueuePayloads } from '../../db/queues';
import type { Services } from '../../services';

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

export async function registerRevokeIdpB(boss: PgBoss, services: Services): Promise<void> {
  await boss.work<QueuePayloads['revoke-idp-b']>('revoke-idp-b', async ([job]) => revokeIdpBGrant(services, job.data));
}
