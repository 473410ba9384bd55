import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { jwtVerify } from 'jose';

/**
 * A local APNs: an HTTP/2 server over TLS (a self-signed localhost certificate kept in
 * `test/clients/push/fixtures/`, for tests only) that checks what Apple checks (the provider token's ES256
 * signature, `kid` and `iss`, the topic, the push type) and answers what a test scripts per device
 * token, in Apple's documented shapes: 200 with `apns-id`, or a status with `{"reason": …}`.
 */
const fixtures = path.join(__dirname, '..', '..', '..', '..', 'test', 'clients', 'push', 'fixtures');
export const localCa = readFileSync(path.join(fixtures, 'localhost-cert.pem'));

export const apnsIdentity = { keyId: 'KEY1234567', teamId: 'TEAM123456', topic: 'app.effects.test' };

export interface ApnsRequest {
  token: string;
  jwt: string;
  headers: http2.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export type ApnsReply = { status: number; reason?: string; retryAfter?: string } | 'hang-up';

export interface FakeApns {
  origin: string;
  /** The .p8 key's counterpart: what a configured sender signs with. */
  privateKey: KeyObject;
  requests: ApnsRequest[];
  /** How many HTTP/2 sessions clients opened. */
  sessions: number;
  /** Replies per token, used in order; the last one repeats. Unscripted tokens get 200. */
  script(token: string, ...replies: ApnsReply[]): void;
  /** Ends every open session (as Apple does with GOAWAY), so clients must reconnect. */
  dropSessions(): void;
  close(): Promise<void>;
}

export async function startFakeApns(): Promise<FakeApns> {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const scripts = new Map<string, ApnsReply[]>();
  const open = new Set<http2.ServerHttp2Session>();
  const requests: ApnsRequest[] = [];
  const server = http2.createSecureServer({
    key: readFileSync(path.join(fixtures, 'localhost-key.pem')),
    cert: localCa,
  });
  const fake = { sessions: 0 } as FakeApns;
  server.on('session', (session) => {
    fake.sessions += 1;
    open.add(session);
    session.on('close', () => open.delete(session));
  });
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    // A stream this server resets on purpose ('hang-up') reports the reset as an error here too.
    stream.on('error', () => {});
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => void answer(stream, headers, Buffer.concat(chunks)));
  });

  async function answer(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, raw: Buffer): Promise<void> {
    const respond = (status: number, reason?: string, extra: Record<string, string> = {}) => {
      stream.respond({ ':status': status, 'apns-id': '00000000-0000-0000-0000-000000000001', ...(reason ? { 'content-type': 'application/json' } : {}), ...extra });
      stream.end(reason ? JSON.stringify({ reason }) : undefined);
    };
    const match = /^\/3\/device\/([^/]+)$/.exec(String(headers[':path']));
    if (headers[':method'] !== 'POST' || !match) return respond(404, 'BadPath');
    if (headers['apns-topic'] !== apnsIdentity.topic) return respond(400, 'BadTopic');
    if (headers['apns-push-type'] !== 'alert') return respond(400, 'InvalidPushType');
    const jwt = /^bearer (.+)$/.exec(String(headers.authorization ?? ''))?.[1];
    if (!jwt) return respond(403, 'MissingProviderToken');
    try {
      const { protectedHeader } = await jwtVerify(jwt, publicKey, { algorithms: ['ES256'], issuer: apnsIdentity.teamId, maxTokenAge: '1h' });
      if (protectedHeader.kid !== apnsIdentity.keyId) return respond(403, 'InvalidProviderToken');
    } catch {
      return respond(403, 'InvalidProviderToken');
    }
    const token = decodeURIComponent(match[1]);
    requests.push({ token, jwt, headers, body: JSON.parse(raw.toString('utf8')) });
    const replies = scripts.get(token);
    const reply = replies && replies.length > 1 ? replies.shift()! : replies?.[0] ?? { status: 200 };
    if (reply === 'hang-up') {
      stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      return;
    }
    respond(reply.status, reply.reason, reply.retryAfter ? { 'retry-after': reply.retryAfter } : {});
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    origin: `https://127.0.0.1:${port}`,
    privateKey,
    requests,
    script: (token: string, ...replies: ApnsReply[]) => {
      scripts.set(token, replies);
    },
    dropSessions: () => {
      for (const session of open) session.close();
    },
    close: async () => {
      for (const session of open) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
