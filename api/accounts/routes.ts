import { revokeRefreshToken } from '../../db/accounts/refresh-tokens';
import { caller } from '../http/authentication';
import { requestSource } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { optionalDeviceHash } from './devices';
import { changePassword, logIn, register } from './email-accounts';
import { fields } from './fields';
import { signInAsGuest } from './guests';
import { refreshSession, tokenRoute } from './sessions';

/** Sign-in and session endpoints of the contract. */
export const authRoutes = [
  tokenRoute<{ device_id: string; ref_code?: string }>({
    operation: 'anonymous', access: 'public', status: 200, description: 'Guest signed in',
    summary: "The device's guest account: start credits once per device; 403 when the device belongs to a full account.",
    body: schema.object({ device_id: fields.deviceId, ref_code: fields.refCode }, ['device_id']),
    bodyExample: { device_id: 'c7a4e0d2-5b1f-4f0e-9d7a-2e8b6c3f1a90' },
    errors: { forbidden: 'The device already belongs to a full account: sign in instead.' },
    session: (ctx, { body }) => signInAsGuest(ctx.services, { deviceId: body.device_id, refCode: body.ref_code }),
  }),
  tokenRoute<{ email: string; password: string; name?: string; device_id?: string; ref_code?: string }>({
    operation: 'register', access: 'optional', status: 201, description: 'Registered',
    summary: "Email registration; with a guest's token the guest becomes the full account under the same id.",
    body: schema.object(
      { email: fields.email, password: fields.password, name: fields.name, device_id: fields.deviceId, ref_code: fields.refCode },
      ['email', 'password'],
    ),
    bodyExample: { email: 'anna@example.com', password: 'correct horse battery', name: 'Anna', device_id: 'c7a4e0d2-5b1f-4f0e-9d7a-2e8b6c3f1a90' },
    errors: { email_taken: 'The email is registered already; a guest and its tokens stay valid.' },
    session: (ctx, { body, user }) => register(ctx.services, {
      email: body.email.trim(),
      password: body.password,
      name: body.name?.trim() || undefined,
      deviceId: body.device_id,
      refCode: body.ref_code,
      caller: user,
    }),
  }),
  tokenRoute<{ email: string; password: string; device_id?: string }>({
    operation: 'login', access: 'public', status: 200, description: 'Signed in',
    summary: 'Email sign-in; locked per (email, source) after a series of wrong passwords.',
    // Only the upper bound of the password is checked: a short one is just a wrong password (401).
    body: schema.object({ email: schema.string({ maxLength: 254 }), password: schema.string({ maxLength: 128 }), device_id: fields.deviceId }, ['email', 'password']),
    bodyExample: { email: 'anna@example.com', password: 'correct horse battery', device_id: 'c7a4e0d2-5b1f-4f0e-9d7a-2e8b6c3f1a90' },
    errors: {
      invalid_credentials: 'Wrong email or password.',
      rate_limited: 'Too many attempts from this address, a series of wrong passwords for this email from this address, or (while the account is under distributed guessing) a device that never signed in to it.',
    },
    session: (ctx, { body }) => logIn(ctx.services, { email: body.email.trim(), password: body.password, deviceId: body.device_id, source: requestSource(ctx.ip) }),
  }),
  tokenRoute<{ refresh_token: string; device_id?: string }>({
    operation: 'refresh', access: 'public', status: 200, description: 'New pair',
    summary: 'Rotates the refresh token; a reused one revokes every session of the user.',
    body: schema.object({ refresh_token: fields.refreshToken, device_id: fields.deviceId }, ['refresh_token']),
    errors: { auth_required: 'The refresh token is expired, revoked or was used before (then every session of the user ends): sign in again.' },
    session: (ctx, { body }) => refreshSession(ctx.services, { refreshToken: body.refresh_token, deviceHash: optionalDeviceHash(body.device_id) }),
  }),
  defineRoute<{ refresh_token: string }>({
    method: 'POST', path: '/v1/auth/logout', access: 'token',
    summary: 'Revokes only the given refresh token; the access token lives out its short lifetime.',
    body: schema.object({ refresh_token: fields.refreshToken }, ['refresh_token']),
    responses: { 204: { description: 'Signed out' } },
    bodyExample: { refresh_token: 'kM3q9XvJ2bT7sYw1LpQ8nR4dF6hZ0aC5eG2iK7mO9uU' },
    handler: async (ctx, { body }) => {
      await revokeRefreshToken(ctx.services.db, caller(ctx).id, body.refresh_token);
      ctx.status = 204;
    },
  }),
  tokenRoute<{ current_password?: string; new_password: string; device_id?: string }>({
    operation: 'change-password', access: 'registered', status: 200, description: 'Password changed',
    summary: 'Changes or sets the password; revokes every session and answers a fresh pair for this device.',
    body: schema.object(
      { current_password: schema.string({ maxLength: 128 }), new_password: fields.password, device_id: fields.deviceId },
      ['new_password'],
    ),
    errors: {
      invalid_credentials: 'An email account sent no `current_password` or a wrong one.',
      forbidden: 'The account has no email (nothing changes, no session ends).',
    },
    session: (ctx, { body }) => changePassword(ctx.services, {
      userId: caller(ctx).id,
      currentPassword: body.current_password,
      newPassword: body.new_password,
      deviceId: body.device_id,
    }),
  }),
];
