import { IdentityProviderUnavailableError, IdentityRejectedError } from '../../clients/identity/errors';
import type { IdpCButton, ProviderProfile } from '../../clients/identity/profile';
import { idpAProfile, idpBProfile, idpCProfile, idpDProfile } from '../../clients/identity/providers';
import { fields } from '../accounts/fields';
import { tokenRoute } from '../accounts/sessions';
import type { SessionUser } from '../http/context';
import { errors } from '../http/errors';
import { schema } from '../../common/validation';
import { signInWithProvider } from './sign-in';

// Provider rule 1: printable ASCII without spaces, at most 4096 characters.
const accessToken = schema.string({ minLength: 1, maxLength: 4096, pattern: '^[\\x21-\\x7E]+$' });
// A compact JWS: three base64url parts.
const idToken = schema.string({ minLength: 1, maxLength: 4096, pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$' });

const signedIn = 'Signed in (also when the account was just created)';

/** The answers every provider sign-in shares besides validation and the rate limit. */
const providerErrors = {
  invalid_credentials: 'The provider refused the token: expired, revoked, or issued to another application.',
  provider_unavailable: 'The provider is not configured on this server, or did not answer (a failure or about 4 s of silence).',
};

interface Common {
  device_id?: string;
  ref_code?: string;
}

const common = { device_id: fields.deviceId, ref_code: fields.refCode };

/** The provider's profile, or the contract's answer when it gives none. */
async function profileFrom(call: Promise<ProviderProfile>): Promise<ProviderProfile> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof IdentityRejectedError) throw errors.invalidCredentials();
    if (error instanceof IdentityProviderUnavailableError) throw errors.providerUnavailable(error.publicMessage);
    throw error;
  }
}

/** Who signs in, with what came along: the caller's token (a guest upgrades) and the device and referral. */
function signInRequest(body: Common, user: SessionUser | null) {
  return { caller: user, deviceId: body.device_id, refCode: body.ref_code };
}

export const identityRoutes = [
  tokenRoute<Common & { id_token: string }>({
    operation: 'idp_a', access: 'optional', status: 200, description: signedIn, errors: providerErrors,
    summary: 'Sign in with idp_a (OpenID Connect id_token); with a guest token a new identity upgrades the guest.',
    body: schema.object({ id_token: idToken, ...common }, ['id_token']),
    session: async (ctx, { body, user }) => signInWithProvider(ctx.services, await profileFrom(idpAProfile(ctx.services, body.id_token)), signInRequest(body, user)),
  }),
  tokenRoute<Common & { id_token: string; authorization_code?: string }>({
    operation: 'idp_b', access: 'optional', status: 200, description: signedIn, errors: providerErrors,
    summary: 'Sign in with idp_b; an authorization_code is exchanged for a refresh token revoked at account deletion.',
    body: schema.object({ id_token: idToken, authorization_code: accessToken, ...common }, ['id_token']),
    session: async (ctx, { body, user }) => {
      const profile = await profileFrom(idpBProfile(ctx.services, body.id_token, body.authorization_code));
      return signInWithProvider(ctx.services, profile, signInRequest(body, user));
    },
  }),
  tokenRoute<Common & { access_token: string; oauth_provider: IdpCButton }>({
    operation: 'idp_c', access: 'optional', status: 200, description: signedIn, errors: providerErrors,
    summary: 'Sign in with idp_c; oauth_provider names the button shown in providers. Never links by email.',
    body: schema.object({
      access_token: accessToken,
      oauth_provider: { type: 'string', enum: ['btn_1', 'btn_2', 'btn_3'], default: 'btn_1' },
      ...common,
    }, ['access_token']),
    session: async (ctx, { body, user }) => signInWithProvider(ctx.services, await profileFrom(idpCProfile(ctx.services, body.access_token, body.oauth_provider)), signInRequest(body, user)),
  }),
  tokenRoute<Common & { access_token: string }>({
    operation: 'idp_d', access: 'optional', status: 200, description: signedIn, errors: providerErrors,
    summary: "Sign in with idp_d; the token must be issued to this service's application.",
    body: schema.object({ access_token: accessToken, ...common }, ['access_token']),
    session: async (ctx, { body, user }) => signInWithProvider(ctx.services, await profileFrom(idpDProfile(ctx.services, body.access_token)), signInRequest(body, user)),
  }),
];
