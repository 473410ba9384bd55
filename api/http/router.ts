import Router from '@koa/router';
import { authenticate } from './authentication';
import type { ApiContext } from './context';
import { errors } from './errors';
import { idempotencyKeyOf } from '../idempotency/idempotency-key';
import type { Route } from './route';
import { pathSchema, validate } from './validation';

const koaPath = (path: string): string => path.replace(/\{([a-z_]+)\}/g, ':$1');

/**
 * Builds the Koa router from the route table. Per route, in this order: authentication and the
 * guest check, limits, validation of path, query, Idempotency-Key and body, then the handler.
 */
export function buildRouter(routes: Route[]): Router<ApiContext['state'], ApiContext> {
  const router = new Router<ApiContext['state'], ApiContext>();
  const seen = new Set<string>();
  for (const route of routes) {
    const endpoint = `${route.method} ${route.path}`;
    if (seen.has(endpoint)) throw new Error(`route declared twice: ${endpoint}`);
    seen.add(endpoint);
    const paramsSchema = pathSchema(route.path, route.params);
    router.register(koaPath(route.path), [route.method], [
      async (ctx, next) => {
        ctx.state.route = route.path;
        await next();
      },
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
  return router;
}
