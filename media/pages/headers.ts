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
  /**
   * A page that is an application, not a layout card (the API reference at `/docs`): its own
   * sources per directive, replacing the layout's stylesheet hash. Every page still denies
   * everything else, framing, `<base>` and forms.
   */
  sources?: { script?: readonly string[]; style?: readonly string[]; img?: readonly string[]; connect?: readonly string[]; worker?: readonly string[] };
}

function contentSecurityPolicy(policy: PagePolicy = {}): string {
  const sources = policy.sources;
  const directive = (name: string, list: readonly string[] | undefined) => (list?.length ? [`${name} ${list.join(' ')}`] : []);
  return [
    "default-src 'none'",
    ...(sources ? directive('script-src', sources.script) : []),
    sources ? directive('style-src', sources.style) : `style-src ${pageStyleHash}`,
    sources ? directive('img-src', sources.img) : 'img-src data:',
    ...(sources ? directive('connect-src', sources.connect) : []),
    ...(sources ? directive('worker-src', sources.worker) : []),
    `form-action ${policy.formAction?.length ? policy.formAction.join(' ') : "'none'"}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].flat().join('; ');
}

type PageContext = Pick<ParameterizedContext, 'status' | 'type' | 'body' | 'set'>;

function setPageHeaders(ctx: Pick<PageContext, 'set'>, policy: PagePolicy): void {
  ctx.set('Content-Security-Policy', contentSecurityPolicy(policy));
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
}

/** Answers a rendered page; pages are per request (a code, an order), so never cached. */
export function sendPage(ctx: PageContext, page: { status?: number; html: string; policy?: PagePolicy; cacheControl?: string }): void {
  ctx.status = page.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.set('Cache-Control', page.cacheControl ?? 'no-store');
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
    // A plain prefix test: this runs for every request, and JSON answers are most of them.
    const type = ctx.response.get('Content-Type');
    if (typeof type === 'string' && type.startsWith('text/html') && !ctx.response.get('Content-Security-Policy')) setPageHeaders(ctx, {});
  };
}
