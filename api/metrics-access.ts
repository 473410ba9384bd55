import type { Middleware } from 'koa';
import { sameSecret } from './http/authentication';
import type { ApiContext } from './http/context';
import { errors } from './http/errors';

/**
 * `/metrics` behind `Authorization: Bearer <METRICS_TOKEN>` when that is set (Prometheus:
 * `authorization: {credentials: …}` in the scrape config); open otherwise. A wrong or missing token
 * is `401 auth_required` in the usual envelope.
 */
export function metricsAccess(): Middleware<ApiContext['state'], ApiContext> {
  return async (ctx, next) => {
    const expected = ctx.services.config.metrics.token;
    if (expected !== null) {
      const given = /^Bearer\s+(.+)$/i.exec(ctx.get('Authorization'))?.[1]?.trim() ?? '';
      if (!sameSecret(given, expected)) {
        ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
        throw errors.authRequired();
      }
    }
    await next();
  };
}
