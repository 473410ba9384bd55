import http from 'node:http';

/**
 * An HTTP server that drains at shutdown. Node's `server.close()` only stops new connections and
 * closes the idle ones: a keep-alive client that always has a request in flight (a load generator,
 * a busy app behind a proxy, pipelined requests) is never idle and would be served until the
 * process is killed. Once `drain` starts, every answer not yet written says `Connection: close`, so
 * each connection closes after its current response and its client reconnects elsewhere; idle
 * connections are closed as soon as they are idle; whatever is still open after `timeoutMs` is
 * closed hard.
 */
export interface DrainableServer {
  server: http.Server;
  /** Resolves once every connection is closed. */
  drain(timeoutMs: number): Promise<void>;
}

/** How often, while draining, connections that went idle are closed. */
const idleSweepMs = 50;

export function drainableServer(handler: http.RequestListener, options: http.ServerOptions = {}): DrainableServer {
  const unanswered = new Set<http.ServerResponse>();
  let draining = false;
  const server = http.createServer(options, (request, response) => {
    if (draining) response.setHeader('Connection', 'close');
    else {
      unanswered.add(response);
      response.once('close', () => unanswered.delete(response));
    }
    handler(request, response);
  });

  const drain = async (timeoutMs: number) => {
    draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Requests in flight whose answer is not written yet close their connection too.
    for (const response of unanswered) if (!response.headersSent) response.setHeader('Connection', 'close');
    unanswered.clear();
    const idleSweep = setInterval(() => server.closeIdleConnections(), idleSweepMs);
    const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
    try {
      await closed;
    } finally {
      clearInterval(idleSweep);
      clearTimeout(deadline);
    }
  };
  return { server, drain };
}
