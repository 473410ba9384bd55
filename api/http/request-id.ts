import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

const wellFormed = /^[A-Za-z0-9._:-]{8,128}$/;

/** A request's id: the caller's `X-Request-Id` when it is well formed, else a new one. */
export function requestIdFrom(incoming: string | undefined): string {
  return incoming !== undefined && wellFormed.test(incoming) ? incoming : randomUUID();
}

/** Every response carries `X-Request-Id` (`requestIdFrom`). */
export function requestId(): Middleware {
  return async (ctx, next) => {
    ctx.state.requestId = requestIdFrom(ctx.get('X-Request-Id'));
    ctx.set('X-Request-Id', ctx.state.requestId);
    await next();
  };
}
