import http from 'node:http';
import net from 'node:net';

/**
 * An HTTP server that drains at shutdown. `server.close()` alone never ends a keep-alive connection
 * that always has a request in flight. Once `drain` starts, every answer says `Connection: close`;
 * a connection with no request under way is closed after `quietBeforeCloseMs` of silence, not at
 * once, because a client sending back to back already has its next request on the wire and closing
 * then would reset it (ECONNRESET) unanswered; whatever is open after `timeoutMs` is closed hard.
 */
export interface DrainableServer {
  server: http.Server;
  /** Resolves once every connection is closed. */
  drain(timeoutMs: number): Promise<void>;
}

/** How often, while draining, silent connections are looked for. */
const idleSweepMs = 50;
/**
 * How long a connection without a request under way must stay silent before the drain closes it:
 * well above the time a client takes to send its next request after an answer (a round trip and a
 * little work, or a stall of a busy client), far below the drain's own limit.
 */
const defaultQuietBeforeCloseMs = 2000;

/** A connection's requests under way, and since when it is silent when it has none. */
interface ConnectionState {
  requests: number;
  idleSince: number;
  /** `socket.bytesRead` when it became idle: any byte since is a request on its way. */
  bytesReadWhenIdle: number;
}

export function drainableServer(
  handler: http.RequestListener,
  options: http.ServerOptions = {},
  { quietBeforeCloseMs = defaultQuietBeforeCloseMs }: { quietBeforeCloseMs?: number } = {},
): DrainableServer {
  const unanswered = new Set<http.ServerResponse>();
  const connections = new Map<net.Socket, ConnectionState>();
  let draining = false;
  const server = http.createServer(options, (request, response) => {
    const socket = request.socket;
    const connection = connections.get(socket);
    if (connection) connection.requests += 1;
    if (draining) response.setHeader('Connection', 'close');
    else unanswered.add(response);
    // One listener for both records: this runs for every request.
    response.once('close', () => {
      unanswered.delete(response);
      if (!connection) return;
      connection.requests -= 1;
      if (connection.requests === 0) Object.assign(connection, { idleSince: Date.now(), bytesReadWhenIdle: socket.bytesRead });
    });
    handler(request, response);
  });
  server.on('connection', (socket: net.Socket) => {
    connections.set(socket, { requests: 0, idleSince: Date.now(), bytesReadWhenIdle: socket.bytesRead });
    socket.once('close', () => connections.delete(socket));
  });

  const closeSilentConnections = () => {
    const now = Date.now();
    for (const [socket, connection] of connections) {
      const silent = connection.requests === 0 && socket.bytesRead === connection.bytesReadWhenIdle;
      if (silent && now - connection.idleSince >= quietBeforeCloseMs) socket.destroy();
    }
  };
  // Timers run before the event loop reads its sockets: after a busy stretch, a request may wait
  // unread in a connection that looks silent. Looking after the next read (setImmediate) sees it.
  const sweepAfterReads = () => setImmediate(closeSilentConnections);

  const drain = async (timeoutMs: number) => {
    draining = true;
    // net.Server's own close only stops listening; http.Server's would also destroy at once every
    // connection between two requests, the race described above.
    const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()));
    // Requests in flight whose answer is not written yet close their connection too.
    for (const response of unanswered) if (!response.headersSent) response.setHeader('Connection', 'close');
    unanswered.clear();
    sweepAfterReads();
    const idleSweep = setInterval(sweepAfterReads, idleSweepMs);
    const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
    try {
      await closed;
    } finally {
      clearInterval(idleSweep);
      clearTimeout(deadline);
      // Every connection is gone: http.Server's close now only stops its timeout checks (a timer
      // that would keep the server and its app referenced).
      server.close();
    }
  };
  return { server, drain };
}
