import type { PgBoss } from 'pg-boss';
import { queues } from '../../db/boss';
import { revokeAtIdpB } from '../../api/identity/idp-b-tokens';
import type { Services } from '../../api/services';
import { unseal } from '../../api/tokens/sealed-secret';

/**
 * Revokes an idp_b grant of a deleted account (enqueued by `DELETE /v1/me`, never awaited by it).
 * An unreachable provider throws, so pg-boss retries with backoff.
 */
export interface RevokeIdpBJob {
  sealedRefreshToken: string;
}

export async function revokeIdpBGrant(services: Services, job: RevokeIdpBJob): Promise<void> {
  const { config, log } = services;
  const outcome = await revokeAtIdpB(config.idp.b, unseal(config.tokenSecret, job.sealedRefreshToken), config.idp.timeoutMs);
  log.info({ outcome }, 'idp_b grant revoked');
}

export async function registerRevokeIdpB(boss: PgBoss, services: Services): Promise<void> {
  await boss.work<RevokeIdpBJob>(queues.revokeIdpB, async ([job]) => revokeIdpBGrant(services, job.data));
}
