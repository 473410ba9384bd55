import net from 'node:net';

/**
 * A TCP proxy on loopback whose link can be cut: a server that went away, or a network partition,
 * as the proxy's clients see it. The fault tests put one between a process and its database; the
 * fault suite one between the service and the provider.
 */
export interface TcpProxy {
  /** `host:port` to dial instead of the target. */
  address: string;
  port: number;
  /** Drops every open connection; new ones go to `onCutConnection` (by default: refused at once). */
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(
  target: { host: string; port: number },
  options: { onCutConnection?: (client: net.Socket) => void } = {},
): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    client.on('error', () => undefined);
    if (cut) return options.onCutConnection ? options.onCutConnection(client) : client.destroy();
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
    address: `127.0.0.1:${port}`,
    port,
    cut: () => {
      cut = true;
      for (const socket of sockets) socket.destroy();
    },
    restore: () => {
      cut = false;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
