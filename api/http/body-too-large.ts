import type { ParameterizedContext } from 'koa';
import { ApiError } from './errors';

/**
 * A request body above its route's limit (the JSON and form parser's, a multipart upload's): the one
 * rule for every size-limited route. The `413 payload_too_large` goes at once, with
 * `Connection: close`, but the connection stays open while the client is still sending: a client
 * that writes its whole body before it reads (Node's fetch, many SDKs) would otherwise meet a closed
 * socket (EPIPE, ECONNRESET) and never read the answer. The rest is read and thrown away up to
 * `discardBoundBytes`, then the connection closes after the answer; past the bound it is cut, so no
 * client makes the server read gigabytes (one that reads while it sends has the answer by then).
 * Node's request timeout (`REQUEST_TIMEOUT_MS`, counted from the request's start) cuts a client that
 * sends too slowly. Over HTTP/2 there is no connection to close: the answer goes as any other.
 */
export class BodyTooLarge extends ApiError {
  constructor(readonly limitBytes: number, message?: string) {
    super('payload_too_large', message);
  }
}

/** Twice the limit, and at least 16 MB: what a client that mistook the limit may still send. */
export function discardBoundBytes(limitBytes: number): number {
  return Math.max(2 * limitBytes, 16 * 1024 * 1024);
}

/**
 * Sends the envelope the error middleware set (`ctx.body`) for a `BodyTooLarge`: at once, and the
 * response ends (and Node closes the connection) when the request's body has ended.
 */
export function answerBodyTooLarge(ctx: ParameterizedContext, error: BodyTooLarge): void {
  const request = ctx.req;
  if (request.httpVersionMajor >= 2) return;
  ctx.set('Connection', 'close');
  if (request.complete) return;
  ctx.respond = false;
  const answer = JSON.stringify(ctx.body);
  ctx.length = Buffer.byteLength(answer);
  ctx.res.write(answer);
  // Whoever read the body so far (the JSON parser, busboy) has let go of it; nothing else listens.
  request.unpipe();
  request.removeAllListeners('data');
  const bound = discardBoundBytes(error.limitBytes);
  let discarded = 0;
  request.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > bound) request.socket.destroy();
  });
  request.once('end', () => ctx.res.end());
  request.resume();
}
