import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Config } from '../../config';
import type { ApiContext } from '../http/context';
import { errors } from '../http/errors';

/**
 * Cross-site request forgery: a browser sends the operator's Basic credentials with any request to
 * the console, a forged form post from another site included. So every write under `/ops` must come
 * from the console's own origin (`Origin`, or `Sec-Fetch-Site` where a browser sends no `Origin`),
 * and the console's own forms also carry a token that only a page of the console can know: an HMAC
 * of the operator and its issue time under TOKEN_SECRET, good for `formTokenTtlS`.
 */
const formTokenTtlS = 12 * 3600;

function signature(config: Config, issuedAtS: number): string {
  return createHmac('sha256', config.tokenSecret).update(`ops-form:${config.ops.user}:${issuedAtS}`).digest('base64url');
}

export function formToken(config: Config, nowMs = Date.now()): string {
  const issuedAtS = Math.floor(nowMs / 1000);
  return `${issuedAtS}.${signature(config, issuedAtS)}`;
}

function isValidFormToken(config: Config, token: unknown, nowMs = Date.now()): boolean {
  if (typeof token !== 'string') return false;
  const match = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return false;
  const issuedAtS = Number(match[1]);
  const ageS = nowMs / 1000 - issuedAtS;
  if (ageS < -60 || ageS > formTokenTtlS) return false;
  return timingSafeEqual(Buffer.from(match[2]), Buffer.from(signature(config, issuedAtS)));
}

const safeMethods = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every console write comes from the console's origin. A browser says where a request comes from
 * in `Sec-Fetch-Site` (set by the browser, out of a page's reach): only `same-origin` passes. One
 * that does not send it is judged by `Origin`: the request's own origin (as the browser addressed
 * it) or PUBLIC_BASE_URL's. A request that says neither (a script with the credentials) passes
 * here; the console's forms still check their token, the pg-boss dashboard its own `Origin` rule.
 * (A form posted from a page with `Referrer-Policy: no-referrer` carries `Origin: null`, so
 * `Sec-Fetch-Site` comes first.)
 */
export function sameOriginWrites(): Middleware<ApiContext['state'], ApiContext> {
  return async (ctx, next) => {
    if (!safeMethods.has(ctx.method)) {
      const site = ctx.get('Sec-Fetch-Site');
      const origin = ctx.get('Origin');
      // Not ctx.origin: in Koa 3 that is the request's Origin header itself.
      const allowed = [`${ctx.protocol}://${ctx.host}`, new URL(ctx.services.config.publicBaseUrl).origin];
      if (site ? site !== 'same-origin' : origin !== '' && !allowed.includes(origin)) {
        throw errors.forbidden('Console forms are accepted from the console only.');
      }
    }
    await next();
  };
}

/** A console form's token, checked before the form does anything. */
export function checkFormToken(ctx: ApiContext): void {
  const body = ctx.request.body as Record<string, unknown> | undefined;
  if (!isValidFormToken(ctx.services.config, body?.csrf)) {
    throw errors.forbidden('The form has expired or did not come from the console: reload the page and try again.');
  }
}
