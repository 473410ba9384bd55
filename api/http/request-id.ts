import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';

const wellFormed = /^[A-Za-z0-9._:-]{8,128}$/;

/** Every response carries `X-Request-Id`: a well-formed incoming one is reused, else a new one. */
export function requestId(): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    ctx.state.requestId = wellFormed.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    await next();
  };
}
