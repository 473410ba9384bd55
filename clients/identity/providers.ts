import type { Config } from '../../config';
import { verifiedEmail, verifyIdToken, type IdTokenSettings } from './id-token';
import { exchangeAuthorizationCode } from './idp-b-tokens';
import { profileName, type IdpCButton, type ProviderProfile } from './profile';
import { IdentityProviderUnavailableError, IdentityRejectedError } from './errors';
import { callProvider, jsonOf } from './provider-http';

/**
 * The four providers' protocols (README, "Identity providers"), each turning what the client sent into a
 * ProviderProfile. A provider missing from the config is `IdentityProviderUnavailableError`.
 */

function idTokenSettings(settings: { issuer: string | null; audiences: string[]; jwksUrl: string | null }): IdTokenSettings {
  const { issuer, audiences, jwksUrl } = settings;
  if (!issuer || !audiences.length || !jwksUrl) throw new IdentityProviderUnavailableError('This sign-in method is not configured.');
  return { issuer, audiences, jwksUrl };
}

function subjectOf(value: unknown): string {
  if ((typeof value === 'string' && value) || typeof value === 'number') return String(value);
  throw new IdentityProviderUnavailableError();
}

export async function idpAProfile(config: Config, idToken: string): Promise<ProviderProfile> {
  const payload = await verifyIdToken(idTokenSettings(config.idp.a), idToken, config.idp.timeoutMs);
  return {
    provider: 'idp_a',
    subject: subjectOf(payload.sub),
    linkableEmail: verifiedEmail(payload),
    name: profileName(payload.name),
    button: null,
    refreshToken: null,
  };
}

export async function idpBProfile(config: Config, idToken: string, authorizationCode: string | undefined): Promise<ProviderProfile> {
  const payload = await verifyIdToken(idTokenSettings(config.idp.b), idToken, config.idp.timeoutMs);
  const refreshToken = authorizationCode ? await exchangeAuthorizationCode(config.idp.b, authorizationCode, config.idp.timeoutMs) : null;
  return {
    provider: 'idp_b',
    subject: subjectOf(payload.sub),
    linkableEmail: verifiedEmail(payload),
    name: profileName(payload.name),
    button: null,
    refreshToken,
  };
}

/** `GET <userinfo>` with the client's access token: `{sub, name?, email?, client_id?}`. */
async function userinfo(url: string, accessToken: string, timeoutMs: number): Promise<Record<string, unknown>> {
  const response = await callProvider(url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } }, timeoutMs);
  if (!response.ok) {
    await response.body?.cancel();
    throw new IdentityRejectedError();
  }
  return jsonOf(response);
}

/** idp_c never links by email: it does not say whether the email is verified. */
export async function idpCProfile(config: Config, accessToken: string, button: IdpCButton): Promise<ProviderProfile> {
  const { userinfoUrl } = config.idp.c;
  if (!userinfoUrl) throw new IdentityProviderUnavailableError('This sign-in method is not configured.');
  const body = await userinfo(userinfoUrl, accessToken, config.idp.timeoutMs);
  return { provider: 'idp_c', subject: subjectOf(body.sub), linkableEmail: null, name: profileName(body.name), button, refreshToken: null };
}

/** idp_d: the token must be issued to this service's own application; its email is the primary one. */
export async function idpDProfile(config: Config, accessToken: string): Promise<ProviderProfile> {
  const { userinfoUrl, clientId } = config.idp.d;
  if (!userinfoUrl || !clientId) throw new IdentityProviderUnavailableError('This sign-in method is not configured.');
  const body = await userinfo(userinfoUrl, accessToken, config.idp.timeoutMs);
  if (body.client_id !== clientId) throw new IdentityRejectedError();
  const email = typeof body.email === 'string' && body.email.includes('@') ? body.email.trim() : null;
  return { provider: 'idp_d', subject: subjectOf(body.sub), linkableEmail: email, name: profileName(body.name), button: null, refreshToken: null };
}
