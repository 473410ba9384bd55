import type { Middleware } from 'koa';
import type { Logger } from '../../logger';

/**
 * One JSON line per request: request id, method, matched route, status and duration. Bodies,
 * query strings and headers are never logged, so tokens and passwords cannot leak through here.
 */
export function requestLog(log: Logger): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      ctx.state.durationMs = durationMs;
      log.info({
        requestId: ctx.state.requestId,
        method: ctx.method,
        route: ctx.state.route ?? (ctx._matchedRoute as string | undefined) ?? null,
        status: ctx.status,
        durationMs: Math.round(durationMs * 100) / 100,
      }, 'request');
    }
  };
}
