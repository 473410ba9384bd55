import type { Middleware, ParameterizedContext } from 'koa';
import { pageStyleHash } from './layout';

/**
 * The headers of every HTML page: a Content-Security-Policy that allows no script at all and only
 * the layout's own stylesheet (by its hash), no framing, no MIME sniffing, no referrer (the URLs
 * carry referral codes and payment ids). `formAction` lists where a page's form may post to and be
 * redirected to; without it no form may be sent.
 */
export interface PagePolicy {
  formAction?: readonly string[];
}

export function contentSecurityPolicy(policy: PagePolicy = {}): string {
  return [
    "default-src 'none'",
    `style-src ${pageStyleHash}`,
    "img-src data:",
    `form-action ${policy.formAction?.length ? policy.formAction.join(' ') : "'none'"}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

type PageContext = Pick<ParameterizedContext, 'status' | 'type' | 'body' | 'set'>;

function setPageHeaders(ctx: Pick<PageContext, 'set'>, policy: PagePolicy): void {
  ctx.set('Content-Security-Policy', contentSecurityPolicy(policy));
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
}

/** Answers a rendered page; pages are per request (a code, an order), so never cached. */
export function sendPage(ctx: PageContext, page: { status?: number; html: string; policy?: PagePolicy }): void {
  ctx.status = page.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', 'no-store');
  setPageHeaders(ctx, page.policy ?? {});
  ctx.body = page.html;
}

/**
 * A safety net in the app's chain: an HTML answer that did not come through `sendPage` (and so set
 * no policy of its own) still gets the strict headers.
 */
export function htmlPageHeaders(): Middleware {
  return async (ctx, next) => {
    await next();
    if (ctx.response.is('html') && !ctx.response.get('Content-Security-Policy')) setPageHeaders(ctx, {});
  };
}
