import type { Middleware } from 'koa';
import type { Logger } from '../../common/logger';
import { httpRequestDuration } from '../metric-definitions';

/** What is recorded of each answered request. */
export interface AnsweredRequest {
  requestId: string;
  method: string;
  /** The matched route's template, null when none matched. */
  route: string | null;
  status: number;
  durationMs: number;
}

/**
 * Records each request once, when its answer is settled: one JSON log line (request id, method,
 * matched route, status, duration) and the latency histogram by route template. Bodies, query
 * strings and headers are never logged, so tokens and passwords cannot leak through here.
 */
export function requestObserver(log: Logger): (answered: AnsweredRequest) => void {
  // These lines carry only the fixed fields below, never a secret, so they skip the redaction pass
  // (its wildcard paths cost about 5% of the API's throughput).
  const lines = log.child({}, { redact: [] });
  return ({ requestId, method, route, status, durationMs }) => {
    // Only templates, never raw paths: unknown paths must not create a series each.
    httpRequestDuration.observe({ method, route: route ?? 'unmatched', status: String(status) }, durationMs / 1000);
    lines.info({ requestId, method, route, status, durationMs: Math.round(durationMs * 100) / 100 }, 'request');
  };
}

/** Observes every request of the Koa chain (after the error envelope); SSE streams count until their snapshot is sent. */
export function requestLog(observe: (answered: AnsweredRequest) => void): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      observe({
        requestId: ctx.state.requestId,
        method: ctx.method,
        route: ctx.state.route ?? (ctx._matchedRoute as string | undefined) ?? null,
        status: ctx.status,
        durationMs: Number(process.hrtime.bigint() - started) / 1e6,
      });
    }
  };
}
