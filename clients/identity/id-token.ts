import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import { IdentityProviderUnavailableError, IdentityRejectedError } from './errors';
import type { Provider } from './profile';
import { throughCircuit, type IdentityContext } from './provider-http';

/**
 * OpenID Connect `id_token` verification for idp_a and idp_b (docs/operations.md, "Identity providers"): signature by
 * the provider's JWKS (cached; jose refetches it when an unknown `kid` arrives), `iss`, `aud` among
 * the configured audiences, `exp` in the future. jose fetches the keys itself, so the whole
 * verification goes through the circuit of the JWKS origin: a failed key fetch counts against it,
 * and while it is open a verification fails at once (the keys jose holds are then stale or missing
 * anyway: its failures are what opened it).
 */
export interface IdTokenSettings {
  issuer: string;
  audiences: string[];
  jwksUrl: string;
}

const keySets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

function keySet(jwksUrl: string, timeoutMs: number): ReturnType<typeof createRemoteJWKSet> {
  const cacheKey = `${jwksUrl} ${timeoutMs}`;
  let keys = keySets.get(cacheKey);
  if (!keys) {
    keys = createRemoteJWKSet(new URL(jwksUrl), { timeoutDuration: timeoutMs });
    keySets.set(cacheKey, keys);
  }
  return keys;
}

/** A failure to get the keys (timeout, network, non-200, garbage) is the provider's, not the token's. */
function isKeyFetchFailure(error: unknown): boolean {
  if (!(error instanceof joseErrors.JOSEError)) return true;
  return error instanceof joseErrors.JWKSTimeout || error instanceof joseErrors.JWKSInvalid || error.code === 'ERR_JOSE_GENERIC';
}

export function verifyIdToken(context: IdentityContext, provider: Provider, settings: IdTokenSettings, token: string): Promise<JWTPayload> {
  return throughCircuit(context, provider, settings.jwksUrl, async () => {
    try {
      const { payload } = await jwtVerify(token, keySet(settings.jwksUrl, context.config.idp.timeoutMs), {
        issuer: settings.issuer,
        audience: settings.audiences,
        algorithms: ['RS256', 'ES256'],
        requiredClaims: ['sub', 'exp'],
      });
      return payload;
    } catch (error) {
      throw isKeyFetchFailure(error) ? new IdentityProviderUnavailableError() : new IdentityRejectedError();
    }
  });
}

/** `email_verified` comes as a boolean or as the strings "true"/"false". */
function emailVerified(payload: JWTPayload): boolean {
  return payload.email_verified === true || payload.email_verified === 'true';
}

/** The email of the token when the provider says it is verified; null otherwise. */
export function verifiedEmail(payload: JWTPayload): string | null {
  return emailVerified(payload) && typeof payload.email === 'string' && payload.email.includes('@') ? payload.email.trim() : null;
}
