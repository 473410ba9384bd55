import type { Config } from '../../config';
import { IdentityProviderUnavailableError, IdentityRejectedError } from './errors';
import { callProvider, form, jsonOf, type IdentityContext } from './provider-http';

/**
 * idp_b's token and revocation endpoints: the optional `authorization_code` is exchanged for a
 * refresh token kept (sealed) only so that it can be revoked when the account is deleted
 * (`workers/accounts/revoke-idp-b.ts`).
 */
type IdpBSettings = Config['idp']['b'];

function clientOf(settings: IdpBSettings): { clientId: string; clientSecret: string } {
  const { clientId, clientSecret } = settings;
  if (!clientId || !clientSecret) throw new IdentityProviderUnavailableError('idp_b is not configured.');
  return { clientId, clientSecret };
}

/** The refresh token the code gives, or null when the provider gives none. A rejected code is `IdentityRejectedError`. */
export async function exchangeAuthorizationCode(context: IdentityContext, code: string): Promise<string | null> {
  const settings = context.config.idp.b;
  const client = clientOf(settings);
  if (!settings.tokenUrl) throw new IdentityProviderUnavailableError('idp_b code exchange is not configured.');
  const response = await callProvider(
    context,
    'idp_b',
    settings.tokenUrl,
    form({ grant_type: 'authorization_code', code, client_id: client.clientId, client_secret: client.clientSecret }),
  );
  if (!response.ok) {
    await response.body?.cancel();
    throw new IdentityRejectedError();
  }
  const body = await jsonOf(response);
  return typeof body.refresh_token === 'string' && body.refresh_token ? body.refresh_token : null;
}

/**
 * Revokes a refresh token (RFC 7009). `unknown_token`: idp_b answered 4xx, it no longer knows the
 * token (revoked or expired), which is as good as revoked. No answer, a 5xx or a 429 is
 * `IdentityProviderUnavailableError`: try again later.
 */
export async function revokeRefreshToken(context: IdentityContext, refreshToken: string): Promise<'revoked' | 'unknown_token'> {
  const settings = context.config.idp.b;
  const { revokeUrl } = settings;
  const client = clientOf(settings);
  if (!revokeUrl) throw new IdentityProviderUnavailableError('idp_b revocation is not configured.');
  const response = await callProvider(
    context,
    'idp_b',
    revokeUrl,
    form({ token: refreshToken, token_type_hint: 'refresh_token', client_id: client.clientId, client_secret: client.clientSecret }),
  );
  await response.body?.cancel();
  return response.ok ? 'revoked' : 'unknown_token';
}
