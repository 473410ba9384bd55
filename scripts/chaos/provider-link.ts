import type net from 'node:net';
import { startTcpProxy } from '../tcp-proxy';

/** What the service asked of the provider while the link was cut: every request, refused. */
export interface RefusedRequests {
  /** Polls of a task's state, by task id. */
  polls: Map<string, number>;
  submissions: number;
  lookups: number;
  other: number;
}

/**
 * The network between the service and the provider, which the suite can cut: a partition. While
 * cut, every open connection is dropped, and a new one is read up to its request line (to count
 * what the service tried: polls by task, submissions, lookups) and then reset, as a link that is
 * down answers. The provider itself goes on: its tasks end and its callbacks, which do not cross
 * this link, still reach the web role.
 */
export interface ProviderLink {
  url: string;
  cut(): void;
  heal(): void;
  refused(): RefusedRequests;
  close(): Promise<void>;
}

export async function startProviderLink(target: { host: string; port: number }): Promise<ProviderLink> {
  let refused: RefusedRequests = { polls: new Map(), submissions: 0, lookups: 0, other: 0 };
  const count = (requestLine: string) => {
    const [method, path] = requestLine.split(' ');
    const request = kindOfRequest(method ?? '', path ?? '');
    if (request.kind === 'poll') refused.polls.set(request.taskId, (refused.polls.get(request.taskId) ?? 0) + 1);
    else if (request.kind === 'submission') refused.submissions += 1;
    else if (request.kind === 'lookup') refused.lookups += 1;
    else refused.other += 1;
  };
  const readAndReset = (client: net.Socket) => {
    let head = '';
    client.on('data', (chunk) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n');
      if (end < 0 && head.length < 8192) return;
      count(head.slice(0, Math.max(0, end)));
      client.resetAndDestroy();
    });
  };
  const proxy = await startTcpProxy(target, { onCutConnection: readAndReset });
  return {
    url: `http://${proxy.address}`,
    cut: () => {
      refused = { polls: new Map(), submissions: 0, lookups: 0, other: 0 };
      proxy.cut();
    },
    heal: () => proxy.restore(),
    refused: () => refused,
    close: () => proxy.close(),
  };
}

type ProviderRequest = { kind: 'poll'; taskId: string } | { kind: 'submission' | 'lookup' | 'other' };

/**
 * What a request to the provider is, in the protocol of each kind: the simulator's own
 * (`/v1/tasks`), Replicate's (`/replicate/v1/...`) or fal's queue (`/fal/queue/...`). A fal task's
 * status and its result are both polls of it.
 */
export function kindOfRequest(method: string, path: string): ProviderRequest {
  const [pathname, query] = path.split('?');
  const poll = /^\/v1\/tasks\/([^/]+)$/.exec(pathname) ?? /^\/replicate\/v1\/predictions\/([^/]+)$/.exec(pathname)
    ?? /^\/fal\/queue\/.+\/requests\/([^/]+?)(?:\/status)?$/.exec(pathname);
  if (method === 'GET' && poll) return { kind: 'poll', taskId: poll[1] };
  if (method === 'POST' && (pathname === '/v1/tasks' || /^\/replicate\/v1\/(?:models\/[^/]+\/[^/]+\/)?predictions$/.test(pathname) || /^\/fal\/queue\/(?!.*\/requests\/)/.test(pathname))) {
    return { kind: 'submission' };
  }
  if (method === 'GET' && ((pathname === '/v1/tasks' && query !== undefined) || pathname === '/replicate/v1/predictions')) return { kind: 'lookup' };
  return { kind: 'other' };
}
