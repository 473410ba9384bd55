import { fields } from '../accounts/fields';
import { tokenResponseSchema } from '../accounts/sessions';
import { operationLimit } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../http/validation';
import type { IdpCButton } from './profile';
import { idpAProfile, idpBProfile, idpCProfile, idpDProfile } from './providers';
import { signInWithProvider } from './sign-in';

// Provider rule 1: printable ASCII without spaces, at most 4096 characters.
const accessToken = schema.string({ minLength: 1, maxLength: 4096, pattern: '^[\\x21-\\x7E]+$' });
// A compact JWS: three base64url parts.
const idToken = schema.string({ minLength: 1, maxLength: 4096, pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$' });

const signedIn = { 200: { description: 'Signed in (also when the account was just created)', schema: tokenResponseSchema } };

interface Common {
  device_id?: string;
  ref_code?: string;
}

export const identityRoutes = [
  defineRoute<Common & { id_token: string }>({
    method: 'POST',
    path: '/v1/auth/idp_a',
    summary: 'Sign in with idp_a (OpenID Connect id_token); with a guest token a new identity upgrades the guest.',
    access: 'optional',
    limits: [operationLimit('idp_a')],
    body: schema.object({ id_token: idToken, device_id: fields.deviceId, ref_code: fields.refCode }, ['id_token']),
    responses: signedIn,
    handler: async (ctx, { body, user }) => {
      const profile = await idpAProfile(ctx.services.config, body.id_token);
      ctx.body = await signInWithProvider(ctx.services, profile, { caller: user, deviceId: body.device_id, refCode: body.ref_code });
    },
  }),
  defineRoute<Common & { id_token: string; authorization_code?: string }>({
    method: 'POST',
    path: '/v1/auth/idp_b',
    summary: 'Sign in with idp_b; an authorization_code is exchanged for a refresh token revoked at account deletion.',
    access: 'optional',
    limits: [operationLimit('idp_b')],
    body: schema.object({ id_token: idToken, authorization_code: accessToken, device_id: fields.deviceId, ref_code: fields.refCode }, ['id_token']),
    responses: signedIn,
    handler: async (ctx, { body, user }) => {
      const profile = await idpBProfile(ctx.services.config, body.id_token, body.authorization_code);
      ctx.body = await signInWithProvider(ctx.services, profile, { caller: user, deviceId: body.device_id, refCode: body.ref_code });
    },
  }),
  defineRoute<Common & { access_token: string; oauth_provider: IdpCButton }>({
    method: 'POST',
    path: '/v1/auth/idp_c',
    summary: 'Sign in with idp_c; oauth_provider names the button shown in providers. Never links by email.',
    access: 'optional',
    limits: [operationLimit('idp_c')],
    body: schema.object({
      access_token: accessToken,
      oauth_provider: { type: 'string', enum: ['btn_1', 'btn_2', 'btn_3'], default: 'btn_1' },
      device_id: fields.deviceId,
      ref_code: fields.refCode,
    }, ['access_token']),
    responses: signedIn,
    handler: async (ctx, { body, user }) => {
      const profile = await idpCProfile(ctx.services.config, body.access_token, body.oauth_provider);
      ctx.body = await signInWithProvider(ctx.services, profile, { caller: user, deviceId: body.device_id, refCode: body.ref_code });
    },
  }),
  defineRoute<Common & { access_token: string }>({
    method: 'POST',
    path: '/v1/auth/idp_d',
    summary: "Sign in with idp_d; the token must be issued to this service's application.",
    access: 'optional',
    limits: [operationLimit('idp_d')],
    body: schema.object({ access_token: accessToken, device_id: fields.deviceId, ref_code: fields.refCode }, ['access_token']),
    responses: signedIn,
    handler: async (ctx, { body, user }) => {
      const profile = await idpDProfile(ctx.services.config, body.access_token);
      ctx.body = await signInWithProvider(ctx.services, profile, { caller: user, deviceId: body.device_id, refCode: body.ref_code });
    },
  }),
];
