import Router from '@koa/router';
import type { Middleware } from 'koa';
import compose from 'koa-compose';
import { authenticate } from './authentication';
import type { ApiContext } from './context';
import { errors } from './errors';
import { idempotencyKeyOf } from '../idempotency/idempotency-key';
import type { Route } from './route';
import { pathSchema, validate } from './validation';

type RouteMiddleware = Router.Middleware<ApiContext['state'], ApiContext>;

const koaPath = (path: string): string => path.replace(/\{([a-z_]+)\}/g, ':$1');

/** The methods whose bodies `parseBody` reads (koa-body's); a route of another method skips it. */
const methodsWithBody = new Set(['POST', 'PUT', 'PATCH']);

export interface RouteTable {
  /** Runs the route a request names, or passes it on when none does. */
  routes: RouteMiddleware;
  /** The table's `405` (with `Allow`), `501` and `OPTIONS` answers, for paths nothing else answered. */
  allowedMethods: RouteMiddleware;
}

/**
 * Builds the route table's dispatch. Per route, in this order: the body parsed (`parseBody`, for a
 * method that has one), authentication and the guest check, limits, validation of path, query,
 * Idempotency-Key and body, then the handler.
 *
 * `@koa/router` matches every request against every route and composes the matched chain anew
 * each time. A request for a path without parameters, spelled as declared (the hot reads: the
 * catalog lists, `/me`), is looked up instead in a map of chains composed once; the router keeps
 * everything else (parameters, another case, a trailing slash), so both find the same route.
 */
export function buildRouter(routes: Route[], parseBody: Middleware): RouteTable {
  const router = new Router<ApiContext['state'], ApiContext>();
  const exact = new Map<string, RouteMiddleware>();
  const seen = new Set<string>();
  for (const route of routes) {
    const endpoint = `${route.method} ${route.path}`;
    if (seen.has(endpoint)) throw new Error(`route declared twice: ${endpoint}`);
    seen.add(endpoint);
    const chain = routeChain(route, endpoint, parseBody);
    router.register(koaPath(route.path), [route.method], chain);
    if (route.path.includes('{')) continue;
    for (const method of route.method === 'GET' ? ['GET', 'HEAD'] : [route.method]) {
      // Only where the router would run this route: an earlier route with parameters may also match.
      if (router.match(route.path, method).pathAndMethod[0]?.stack[0] === (chain as unknown)) exact.set(`${method} ${route.path}`, chain);
    }
  }
  const routed = router.routes();
  // A path whose first segment no route has (`/healthz`, the store's and the webhooks' paths) skips
  // matching every route's pattern; `ctx.matched` is left as the router leaves it when none matches.
  const firstSegments = new Set(routes.map((route) => firstSegmentOf(route.path)));
  const mayMatch = [...firstSegments].some((segment) => segment.includes('{')) ? () => true : (path: string) => firstSegments.has(firstSegmentOf(path));
  return {
    routes: (ctx, next) => {
      const chain = exact.get(`${ctx.method} ${ctx.path}`);
      if (chain) {
        ctx.params = {};
        return chain(ctx, next);
      }
      if (mayMatch(ctx.path)) return routed(ctx, next);
      (ctx as { matched?: unknown[] }).matched ??= [];
      return next();
    },
    allowedMethods: router.allowedMethods(),
  };
}

/** A path's first segment as the router compares it (case-insensitively). */
function firstSegmentOf(path: string): string {
  return path.split('/', 2)[1]?.toLowerCase() ?? '';
}

/** One route's middleware, composed once. */
function routeChain(route: Route, endpoint: string, parseBody: Middleware): RouteMiddleware {
  const paramsSchema = pathSchema(route.path, route.params);
  return compose([
    (ctx, next) => {
      ctx.state.route = route.path;
      return next();
    },
    ...(methodsWithBody.has(route.method) ? [parseBody as RouteMiddleware] : []),
    authenticate(route.access),
    ...(route.limits ?? []),
    async (ctx) => {
      if (!route.handler) throw errors.notImplemented();
      const params = validate(paramsSchema, { ...ctx.params }, 'path');
      const query = route.query ? validate(route.query, { ...ctx.query }, 'query') : ctx.query;
      const idempotency = route.idempotent ? idempotencyKeyOf(ctx, route.idempotent, endpoint) : null;
      const body = route.body ? validate(route.body, ctx.request.body ?? {}, 'body') : ctx.request.body;
      await route.handler(ctx, { body, query, params, user: ctx.state.user, idempotency });
    },
  ]);
}
