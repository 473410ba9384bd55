import type { Knex } from 'knex';
import http from 'node:http';
import type net from 'node:net';
import { createKnex } from '../db/knex';
import { startTcpProxy, type TcpProxy } from '../scripts/tcp-proxy';

export { startTcpProxy, type TcpProxy };
import { databaseUrl, silentLogger } from './harness';

/**
 * Proxies that put a fault between a process and the real thing it talks to, for the fault tests:
 * a TCP proxy whose link can be cut (a database outage, as its clients see one) and an HTTP proxy
 * that forwards a request but never answers it (an answer lost on the way back).
 */

/** `url` with its host and port replaced by the proxy's (and no Unix socket, which would go around it). */
export function throughProxy(url: string, proxy: TcpProxy): string {
  const parsed = new URL(url);
  parsed.host = proxy.address;
  parsed.searchParams.delete('host');
  return parsed.toString();
}

export interface ProxiedDatabase {
  proxy: TcpProxy;
  /** The run's database URL, through the proxy. */
  url: string;
  db: Knex;
  close(): Promise<void>;
}

/** The run's database behind a TCP proxy, with a knex on it: a database whose link a test can cut. */
export async function proxiedDatabase(): Promise<ProxiedDatabase> {
  const direct = new URL(databaseUrl());
  const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port) });
  const url = throughProxy(databaseUrl(), proxy);
  const db = createKnex(url, 5, silentLogger());
  return {
    proxy,
    url,
    db,
    close: async () => {
      proxy.restore();
      await db.destroy();
      await proxy.close();
    },
  };
}

export interface HeldAnswer {
  method: string;
  path: string;
  status: number;
  body: string;
}

export interface HoldingProxy {
  url: string;
  /** Requests forwarded whose answers were kept from the client. */
  held: HeldAnswer[];
  close(): Promise<void>;
}

/**
 * Forwards every request to `target`; for the requests `hold` picks, it waits for the target's
 * whole answer, keeps it in `held` and never answers the client: the client sees a request that
 * reached the server and an answer that never came.
 */
export async function startHoldingProxy(target: string, hold: (request: http.IncomingMessage) => boolean): Promise<HoldingProxy> {
  const held: HeldAnswer[] = [];
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((request, response) => {
    open.add(response);
    response.on('close', () => open.delete(response));
    const forwarded = http.request(new URL(request.url ?? '/', target), { method: request.method, headers: request.headers }, (answer) => {
      if (!hold(request)) {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
        return;
      }
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () => held.push({ method: request.method ?? '', path: request.url ?? '', status: answer.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    held,
    close: async () => {
      for (const response of open) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
