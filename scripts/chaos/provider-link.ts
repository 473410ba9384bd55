import net from 'node:net';

/** What the service asked of the provider while the link was cut: every request, refused. */
export interface RefusedRequests {
  /** Polls of a task's state, by task id. */
  polls: Map<string, number>;
  submissions: number;
  lookups: number;
  other: number;
}

/**
 * The network between the service and the provider, as a TCP proxy on loopback that can be cut: a
 * partition. While cut, every open connection is dropped, and a new one is read up to its request
 * line (to count what the service tried: polls by task, submissions, lookups) and then reset, as
 * a link that is down answers. The provider itself goes on: its tasks end and its callbacks, which
 * do not cross this link, still reach the web role.
 */
export interface ProviderLink {
  url: string;
  cut(): void;
  heal(): void;
  refused(): RefusedRequests;
  close(): Promise<void>;
}

export async function startProviderLink(target: { host: string; port: number }): Promise<ProviderLink> {
  const sockets = new Set<net.Socket>();
  let cut = false;
  let refused: RefusedRequests = { polls: new Map(), submissions: 0, lookups: 0, other: 0 };
  const count = (requestLine: string) => {
    const [method, target] = requestLine.split(' ');
    const poll = /^\/v1\/tasks\/([^/?]+)$/.exec(target ?? '');
    if (method === 'GET' && poll) refused.polls.set(poll[1], (refused.polls.get(poll[1]) ?? 0) + 1);
    else if (method === 'POST' && target === '/v1/tasks') refused.submissions += 1;
    else if (method === 'GET' && target?.startsWith('/v1/tasks?')) refused.lookups += 1;
    else refused.other += 1;
  };
  const server = net.createServer((client) => {
    client.on('error', () => undefined);
    if (cut) {
      let head = '';
      client.on('data', (chunk) => {
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n');
        if (end < 0 && head.length < 8192) return;
        count(head.slice(0, Math.max(0, end)));
        client.resetAndDestroy();
      });
      return;
    }
    const upstream = net.connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    cut: () => {
      cut = true;
      refused = { polls: new Map(), submissions: 0, lookups: 0, other: 0 };
      for (const socket of sockets) socket.resetAndDestroy();
    },
    heal: () => {
      cut = false;
    },
    refused: () => refused,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
