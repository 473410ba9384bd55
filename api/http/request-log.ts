import type { Middleware } from 'koa';
import type { Logger } from '../../common/logger';
import { httpRequestDuration } from '../metric-definitions';

/**
 * Observes every request once, when its answer is settled (after the error envelope): one JSON log
 * line (request id, method, matched route, status, duration) and the latency histogram by route
 * template. Bodies, query strings and headers are never logged, so tokens and passwords cannot
 * leak through here. SSE streams count until their snapshot is sent.
 */
export function requestLog(log: Logger): Middleware {
  // These lines carry only the fixed fields below, never a secret, so they skip the redaction pass
  // (its wildcard paths cost about 5% of the API's throughput).
  const lines = log.child({}, { redact: [] });
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6;
      // Only templates, never raw paths: unknown paths must not create a series each.
      const route: string | null = ctx.state.route ?? (ctx._matchedRoute as string | undefined) ?? null;
      httpRequestDuration.observe({ method: ctx.method, route: route ?? 'unmatched', status: String(ctx.status) }, durationMs / 1000);
      lines.info({ requestId: ctx.state.requestId, method: ctx.method, route, status: ctx.status, durationMs: Math.round(durationMs * 100) / 100 }, 'request');
    }
  };
}
