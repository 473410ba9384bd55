import type { Config } from '../../config';
import { errors } from '../http/errors';
import { callProvider, form, jsonOf } from './provider-http';

/**
 * idp_b's token endpoint (decisions.md section 3): the optional `authorization_code` is exchanged
 * for a refresh token kept only so that it can be revoked when the account is deleted.
 */
type IdpBSettings = Config['idp']['b'];

function clientOf(settings: IdpBSettings): { tokenUrl: string; clientId: string; clientSecret: string } {
  const { tokenUrl, clientId, clientSecret } = settings;
  if (!tokenUrl || !clientId || !clientSecret) throw errors.providerUnavailable('idp_b code exchange is not configured.');
  return { tokenUrl, clientId, clientSecret };
}

/** The refresh token the code gives, or null when the provider gives none. A rejected code is `401`. */
export async function exchangeAuthorizationCode(settings: IdpBSettings, code: string, timeoutMs: number): Promise<string | null> {
  const client = clientOf(settings);
  const response = await callProvider(
    client.tokenUrl,
    form({ grant_type: 'authorization_code', code, client_id: client.clientId, client_secret: client.clientSecret }),
    timeoutMs,
  );
  if (!response.ok) {
    await response.body?.cancel();
    throw errors.invalidCredentials();
  }
  const body = await jsonOf(response);
  return typeof body.refresh_token === 'string' && body.refresh_token ? body.refresh_token : null;
}

export class RevocationFailed extends Error {}

/**
 * Revokes a refresh token at idp_b. A 4xx means the provider no longer knows the token (it was
 * revoked or expired): done. Unavailability throws, so the background job retries.
 */
export async function revokeAtIdpB(settings: IdpBSettings, refreshToken: string, timeoutMs: number): Promise<'revoked' | 'unknown_token'> {
  const { revokeUrl, clientId, clientSecret } = settings;
  if (!revokeUrl || !clientId || !clientSecret) throw new RevocationFailed('idp_b revocation is not configured');
  const response = await callProvider(
    revokeUrl,
    form({ token: refreshToken, token_type_hint: 'refresh_token', client_id: clientId, client_secret: clientSecret }),
    timeoutMs,
  ).catch(() => {
    throw new RevocationFailed('idp_b did not answer the revocation');
  });
  await response.body?.cancel();
  return response.ok ? 'revoked' : 'unknown_token';
}
