import { verifiedEmail, verifyIdToken, type IdTokenSettings } from './id-token';
import { exchangeAuthorizationCode } from './idp-b-tokens';
import { profileName, type IdpCButton, type Provider, type ProviderProfile } from './profile';
import { IdentityProviderUnavailableError, IdentityRejectedError } from './errors';
import { callProvider, jsonOf, type IdentityContext } from './provider-http';

/**
 * The four providers' protocols (docs/operations.md, "Identity providers"), each turning what the client sent into a
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

export async function idpAProfile(context: IdentityContext, idToken: string): Promise<ProviderProfile> {
  const payload = await verifyIdToken(context, 'idp_a', idTokenSettings(context.config.idp.a), idToken);
  return {
    provider: 'idp_a',
    subject: subjectOf(payload.sub),
    linkableEmail: verifiedEmail(payload),
    name: profileName(payload.name),
    button: null,
    refreshToken: null,
  };
}

export async function idpBProfile(context: IdentityContext, idToken: string, authorizationCode: string | undefined): Promise<ProviderProfile> {
  const payload = await verifyIdToken(context, 'idp_b', idTokenSettings(context.config.idp.b), idToken);
  const refreshToken = authorizationCode ? await exchangeAuthorizationCode(context, authorizationCode) : null;
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
async function userinfo(context: IdentityContext, provider: Provider, url: string, accessToken: string): Promise<Record<string, unknown>> {
  const response = await callProvider(context, provider, url, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } });
  if (!response.ok) {
    await response.body?.cancel();
    throw new IdentityRejectedError();
  }
  return jsonOf(response);
}

/** idp_c never links by email: it does not say whether the email is verified. */
export async function idpCProfile(context: IdentityContext, accessToken: string, button: IdpCButton): Promise<ProviderProfile> {
  const { userinfoUrl } = context.config.idp.c;
  if (!userinfoUrl) throw new IdentityProviderUnavailableError('This sign-in method is not configured.');
  const body = await userinfo(context, 'idp_c', userinfoUrl, accessToken);
  return { provider: 'idp_c', subject: subjectOf(body.sub), linkableEmail: null, name: profileName(body.name), button, refreshToken: null };
}

/** idp_d: the token must be issued to this service's own application; its email is the primary one. */
export async function idpDProfile(context: IdentityContext, accessToken: string): Promise<ProviderProfile> {
  const { userinfoUrl, clientId } = context.config.idp.d;
  if (!userinfoUrl || !clientId) throw new IdentityProviderUnavailableError('This sign-in method is not configured.');
  const body = await userinfo(context, 'idp_d', userinfoUrl, accessToken);
  if (body.client_id !== clientId) throw new IdentityRejectedError();
  const email = typeof body.email === 'string' && body.email.includes('@') ? body.email.trim() : null;
  return { provider: 'idp_d', subject: subjectOf(body.sub), linkableEmail: email, name: profileName(body.name), button: null, refreshToken: null };
}
