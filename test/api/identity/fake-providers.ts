import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Small identity providers over real HTTP on loopback, for end-to-end tests: an OpenID provider with
 * JWKS, token and revocation endpoints, and a userinfo endpoint.
 */
export interface FakeServer {
  url: string;
  close(): Promise<void>;
}

async function serve(handler: (request: http.IncomingMessage, body: string, response: http.ServerResponse) => void): Promise<FakeServer> {
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => handler(request, body, response));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function json(response: http.ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export interface FakeOpenIdProvider extends FakeServer {
  /** Authorization codes the token endpoint accepts, and the refresh token each gives. */
  codes: Map<string, string>;
  /** Form bodies received by the revocation endpoint. */
  revocations: Record<string, string>[];
  jwksRequests: number;
  /** Requests that reached it, whatever it answered. */
  requests: number;
  /** While set, every endpoint answers 503. */
  down: boolean;
}

export async function startFakeOpenIdProvider(jwks: () => unknown, client: { id: string; secret: string }): Promise<FakeOpenIdProvider> {
  const provider = { codes: new Map<string, string>(), revocations: [] as Record<string, string>[], jwksRequests: 0, requests: 0, down: false };
  const server = await serve((request, body, response) => {
    provider.requests += 1;
    if (provider.down) return json(response, 503, { error: 'temporarily_unavailable' });
    const form = Object.fromEntries(new URLSearchParams(body));
    const clientOk = form.client_id === client.id && form.client_secret === client.secret;
    if (request.method === 'GET' && request.url === '/jwks') {
      provider.jwksRequests += 1;
      return json(response, 200, jwks());
    }
    if (request.method === 'POST' && request.url === '/token') {
      const refreshToken = provider.codes.get(form.code);
      if (!clientOk || form.grant_type !== 'authorization_code' || !refreshToken) return json(response, 400, { error: 'invalid_grant' });
      provider.codes.delete(form.code);
      return json(response, 200, { access_token: 'at', token_type: 'Bearer', refresh_token: refreshToken });
    }
    if (request.method === 'POST' && request.url === '/revoke') {
      if (!clientOk) return json(response, 401, { error: 'invalid_client' });
      provider.revocations.push(form);
      return json(response, 200, {});
    }
    json(response, 404, { error: 'not_found' });
  });
  return Object.assign(provider, server);
}

export interface FakeUserinfo extends FakeServer {
  /** Access token → profile. Unknown tokens get 401; `hang` never answers; `boom` gets 500. */
  profiles: Map<string, Record<string, unknown>>;
  /** Requests that reached it, whatever it answered. */
  requests: number;
}

export async function startFakeUserinfo(): Promise<FakeUserinfo> {
  const profiles = new Map<string, Record<string, unknown>>();
  const counts = { requests: 0 };
  const server = await serve((request, _body, response) => {
    counts.requests += 1;
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '';
    if (token === 'hang') return;
    if (token === 'boom') return json(response, 500, { error: 'internal' });
    const profile = profiles.get(token);
    if (!profile) return json(response, 401, { error: 'invalid_token' });
    json(response, 200, profile);
  });
  return Object.assign({ profiles, get requests() { return counts.requests; } }, server);
}
