import type { Config } from '../../config';
import { errors } from '../http/errors';
import { callProvider, form, jsonOf } from './provider-http';

/**
 * idp_b's token endpoint (README, "Identity providers"): the optional `authorization_code` is exchanged
 * for a refresh token kept (sealed) only so that it can be revoked when the account is deleted
 * (`workers/accounts/revoke-idp-b.ts`).
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
