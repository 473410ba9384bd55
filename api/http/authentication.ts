import { createHash, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { verifyAccessToken } from '../tokens/access-token';
import type { ApiContext, SessionUser } from './context';
import { errors } from './errors';

/**
 * Who may call a route (contract Auth columns):
 * - `public` (P): a valid token is used, a missing or broken one is ignored;
 * - `optional` (G): a missing token is fine, a broken or expired one is `401` (so a guest upgrade
 *   never silently turns into a second account);
 * - `token` (T): `401 auth_required` without a valid token;
 * - `registered` (T, full account only): as `token`, then `403 registration_required` for a guest.
 */
export type Access = 'public' | 'optional' | 'token' | 'registered';

const bearer = /^Bearer ([A-Za-z0-9._~+/=-]{1,4096})$/;

async function sessionUser(ctx: ApiContext): Promise<SessionUser | null | 'invalid'> {
  const header = ctx.get('Authorization');
  if (!header) return null;
  const token = bearer.exec(header)?.[1];
  if (!token) return 'invalid';
  const { config, db } = ctx.services;
  const userId = await verifyAccessToken(config.tokenSecret, token);
  if (!userId) return 'invalid';
  // A deleted user's token must stop working at once, not when it expires.
  const row = await db('users').where({ id: userId }).first('id', 'is_anonymous');
  return row ? { id: row.id, isAnonymous: row.is_anonymous } : 'invalid';
}

export function authenticate(access: Access): Middleware<ApiContext['state'], ApiContext> {
  return async (ctx, next) => {
    const found = await sessionUser(ctx);
    if (found === 'invalid' && access !== 'public') throw errors.authRequired();
    const user = found === 'invalid' ? null : found;
    if (!user && (access === 'token' || access === 'registered')) throw errors.authRequired();
    if (user?.isAnonymous && access === 'registered') throw errors.registrationRequired();
    ctx.state.user = user;
    await next();
  };
}

/** The caller of a route declared `token` or `registered`. */
export function caller(ctx: ApiContext): SessionUser {
  if (!ctx.state.user) throw errors.authRequired();
  return ctx.state.user;
}

/**
 * Compares a secret a client sent (a metrics token, an operator password) with the configured one
 * by their digests, so neither its length nor its content leaks through timing.
 */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}
