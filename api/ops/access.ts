import type { Middleware } from 'koa';
import { sameSecret } from '../http/authentication';
import { errors } from '../http/errors';
import type { ApiContext } from '../http/context';
import { checkOperatorAllowed, recordOperatorFailure, requestSource } from '../http/rate-limit';

/**
 * Whether a request is for the operator console: `/ops` and everything under it (the pg-boss
 * dashboard's `/ops/queues.data` included).
 */
export function isConsolePath(path: string): boolean {
  return path === '/ops' || path.startsWith('/ops/');
}

/**
 * HTTP Basic with OPS_USER and OPS_PASSWORD in front of every console path, what an operator's
 * browser asks for by itself. Without credentials, or with wrong ones, `401 auth_required` with
 * `WWW-Authenticate: Basic`; with no password configured, every request is refused. Wrong
 * credentials count against the request source (the login lock's settings), and a locked source is
 * refused with `429` before its credentials are looked at.
 */
export function operatorAccess(): Middleware<ApiContext['state'], ApiContext> {
  return async (ctx, next) => {
    const { db, config } = ctx.services;
    const refuse = () => {
      ctx.set('WWW-Authenticate', 'Basic realm="operator console", charset="UTF-8"');
      return errors.authRequired();
    };
    const given = basicCredentials(ctx.get('Authorization'));
    if (!given) throw refuse();
    const source = requestSource(ctx.ip);
    await checkOperatorAllowed(db, source);
    const { user, password } = config.ops;
    // Both parts are always compared, so the time taken says nothing about which one was wrong.
    const userMatches = sameSecret(given.user, user);
    const passwordMatches = password !== null && sameSecret(given.password, password);
    if (!userMatches || !passwordMatches) {
      await recordOperatorFailure(db, config.rateLimits, source);
      throw refuse();
    }
    await next();
  };
}

function basicCredentials(header: string): { user: string; password: string } | null {
  const encoded = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)?.[1];
  if (!encoded) return null;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
