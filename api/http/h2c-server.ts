import http2 from 'node:http2';
import type { RequestListener } from 'node:http';

/**
 * The web role's optional second listener (`H2C_PORT`): HTTP/2 over cleartext with prior knowledge,
 * for a load balancer that speaks HTTP/2 to its backends (Envoy, Google Cloud's, AWS ALB with an
 * HTTP/2 target group). It serves the same app as the HTTP/1.1 port; what changes is that requests
 * and SSE streams share a few connections, so a process holds far more streams than its open-file
 * limit would allow at one connection each. Never meant for phones directly: no TLS, and the
 * load balancer in front is the one that faces clients.
 *
 * Guards, beside Node's own (`maxSessionMemory`, its defences against floods of resets and pings):
 * headers are limited like the HTTP/1.1 port's; a connection takes at most
 * `maxConcurrentStreams` requests at once; a request stream silent for the request timeout is
 * reset (an SSE stream turns its own timeout off); a connection idle for the keep-alive timeout is
 * closed, as HTTP/1.1 keep-alive is.
 */
export interface DrainableH2cServer {
  server: http2.Http2Server;
  /**
   * Stops taking connections, sends every connection a GOAWAY (its streams under way finish; open
   * SSE streams are ended by their owner) and resolves once every connection is closed; whatever is
   * still open after `timeoutMs` is destroyed.
   */
  drain(timeoutMs: number): Promise<void>;
}

export interface H2cServerOptions {
  /** Concurrent streams one connection may carry (an SSE stream counts as one for as long as it is open). */
  maxConcurrentStreams: number;
  requestTimeoutMs: number;
  idleTimeoutMs: number;
}

/** The same bound as Node's HTTP/1.1 parser (`--max-http-header-size`). */
const maxHeaderListBytes = 16 * 1024;

export function drainableH2cServer(handler: RequestListener, options: H2cServerOptions): DrainableH2cServer {
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer({
    settings: { maxConcurrentStreams: options.maxConcurrentStreams, maxHeaderListSize: maxHeaderListBytes },
  }, (request, response) => {
    // The body parsers (type-is) know a request has a body by HTTP/1.1's Content-Length or
    // Transfer-Encoding; HTTP/2 frames the body instead, and a load balancer forwarding a chunked
    // upload sends neither: such a request would be read as bodiless.
    if (!request.stream.endAfterHeaders && request.headers['content-length'] === undefined) request.headers['transfer-encoding'] = 'chunked';
    (handler as unknown as (request: http2.Http2ServerRequest, response: http2.Http2ServerResponse) => void)(request, response);
  });
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    session.setTimeout(options.idleTimeoutMs, () => session.close());
  });
  server.on('stream', (stream) => {
    stream.setTimeout(options.requestTimeoutMs, () => stream.close(http2.constants.NGHTTP2_CANCEL));
  });

  const drain = async (timeoutMs: number) => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const session of sessions) session.close();
    const deadline = setTimeout(() => {
      for (const session of sessions) session.destroy();
    }, timeoutMs);
    try {
      await closed;
    } finally {
      clearTimeout(deadline);
    }
  };
  return { server, drain };
}
