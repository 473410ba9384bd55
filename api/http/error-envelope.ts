import type { Middleware } from 'koa';
import { isUnreachable } from '../../db/unreachable';
import type { Logger } from '../../common/logger';
import { answerBodyTooLarge, BodyTooLarge } from './body-too-large';
import { ApiError, errors } from './errors';

/**
 * Turns every thrown error into the contract's envelope. An unreachable database (a restart, a
 * failover) answers `503` with `Retry-After`: the request was fine and will succeed in a moment.
 * Other unexpected errors answer a generic 500; their cause goes to the log with the request id,
 * never to the client. A body above its limit is answered while the rest of it still arrives
 * (`body-too-large.ts`).
 */
export function errorEnvelope(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      // The router leaves unknown paths at 404 and known paths with another method at 405/501.
      if (ctx.body === undefined && ctx.status === 404) throw errors.notFound();
      if (ctx.body === undefined && (ctx.status === 405 || ctx.status === 501)) {
        throw errors.methodNotAllowed(ctx.response.get('Allow').split(/,\s*/).filter(Boolean));
      }
    } catch (thrown) {
      let error: ApiError;
      if (thrown instanceof ApiError) {
        error = thrown;
      } else if (isUnreachable(thrown)) {
        log.warn({ requestId: ctx.state.requestId, err: thrown }, 'database unreachable');
        error = errors.brieflyUnavailable();
      } else {
        log.error({ requestId: ctx.state.requestId, err: thrown }, 'unexpected error');
        error = errors.internal();
      }
      ctx.status = error.status;
      ctx.set(error.headers);
      ctx.body = error.body;
      if (error instanceof BodyTooLarge) answerBodyTooLarge(ctx, error);
    }
  };
}
