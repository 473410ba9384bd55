import { expect } from 'chai';
import http2 from 'node:http2';
import { openSseOverHttp2, type SseConnection } from '../../../scripts/loadtest/sse-client';
import { changeStatus, insertGeneration } from '../../generation-fixtures';
import { resetDatabase, services, startTestApp, type TestApp } from '../../harness';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

interface Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: string;
}

/** One request on `session`; resolves with the whole answer, or rejects when the stream is reset first. */
function request(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let answer: Omit<Answer, 'body'> | null = null;
    let text = '';
    stream.setEncoding('utf8');
    stream.on('response', (received) => (answer = { status: Number(received[':status']), headers: received }));
    stream.on('data', (chunk: string) => (text += chunk));
    stream.on('end', () => (answer ? resolve({ ...answer, body: text }) : reject(new Error('no answer'))));
    stream.on('close', () => {
      if (!answer) reject(new Error(`stream reset (code ${stream.rstCode})`));
    });
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
}

async function streamLeases(): Promise<number> {
  const [{ count }] = await services().db('stream_leases').count({ count: '*' });
  return Number(count);
}

describe('HTTP/2 over cleartext (H2C_PORT)', function () {
  this.timeout(30_000);
  let app: TestApp;
  let session: http2.ClientHttp2Session;
  const open: SseConnection[] = [];

  before(async () => {
    app = await startTestApp({ config: { H2C_PORT: '0', REQUEST_TIMEOUT_MS: '1000' } });
  });
  after(() => app.close());
  beforeEach(async () => {
    await resetDatabase();
    session = http2.connect(app.h2cUrl!);
  });
  afterEach(async () => {
    for (const connection of open.splice(0)) connection.destroy();
    session.destroy();
    await eventually(() => streamLeases(), (count) => count === 0);
  });

  it('is off unless configured: the web role has no second listener', async () => {
    const plain = await startTestApp();
    try {
      expect(plain.h2cUrl).to.equal(null);
    } finally {
      await plain.close();
    }
  });

  it('sends a catalog read answered before again from the catalog cache, as its route did', async () => {
    await app.catalogSettled();
    const first = await request(session, { ':path': '/v1/tags?locale=en' });
    const again = await request(session, { ':path': '/v1/tags?locale=en', 'x-request-id': 'h2c-replayed-read' });
    expect(first.status).to.equal(200);
    expect(again.status).to.equal(200);
    expect(again.body).to.equal(first.body);
    for (const header of ['etag', 'cache-control', 'content-type', 'vary']) expect(again.headers[header]).to.equal(first.headers[header]);
    expect(again.headers['x-request-id']).to.equal('h2c-replayed-read');
    const revalidated = await request(session, { ':path': '/v1/tags?locale=en', 'if-none-match': String(first.headers.etag) });
    expect(revalidated.status).to.equal(304);
    expect(revalidated.body).to.equal('');
    expect(revalidated.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  });

  it('serves the same API as the HTTP/1.1 port, with its request ids and error envelope', async () => {
    const health = await request(session, { ':path': '/healthz' });
    expect(health.status).to.equal(200);
    expect(health.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);

    const user = await makeUser();
    const me = await request(session, { ':path': '/v1/me', authorization: `Bearer ${user.token}` });
    expect(me.status).to.equal(200);
    expect(JSON.parse(me.body).id).to.equal(user.id);

    const missing = await request(session, { ':path': '/v1/no-such-path' });
    expect(missing.status).to.equal(404);
    expect(JSON.parse(missing.body).error.code).to.equal('not_found');

    // A body without Content-Length (a chunked upload the load balancer forwarded) is read all the same.
    const broken = await request(session, { ':method': 'POST', ':path': '/v1/auth/anonymous', 'content-type': 'application/json' }, '{"device_id": "secret-value-7"');
    expect(broken.status).to.equal(422);
    expect(JSON.parse(broken.body).error.details[0].type).to.equal('json_invalid');
    expect(broken.body).not.to.include('secret-value-7');
    const guest = await request(session, { ':method': 'POST', ':path': '/v1/auth/anonymous', 'content-type': 'application/json' }, JSON.stringify({ device_id: 'c7a4e0d2-5b1f-4f0e-9d7a-2e8b6c3f1a90' }));
    expect(guest.status).to.equal(200);
    expect(JSON.parse(guest.body).access_token).to.be.a('string');
  });

  it('carries several generation streams on one connection: snapshot, one event per change, closed at the terminal status', async () => {
    const user = await makeUser();
    const ids = await Promise.all([1, 2, 3].map(() => insertGeneration(user.id, 'pending')));
    const streams = await Promise.all(ids.map((id) => openSseOverHttp2(session, `/v1/generations/${id}/stream`, user.token)));
    open.push(...streams);
    for (const [index, stream] of streams.entries()) {
      expect(stream.status).to.equal(200);
      expect(stream.headers['content-type']).to.match(/^text\/event-stream/);
      expect(stream.headers.connection).to.equal(undefined);
      expect(JSON.parse((await stream.next()).data)).to.deep.equal({ id: ids[index], status: 'pending', error_code: null });
    }
    expect(await streamLeases()).to.equal(3);

    await changeStatus(ids[1], 'succeeded');
    expect(JSON.parse((await streams[1].next()).data).status).to.equal('succeeded');
    expect(await streams[1].endsWithin(2000)).to.equal(true);
    await changeStatus(ids[0], 'processing');
    expect(JSON.parse((await streams[0].next()).data).status).to.equal('processing');
    // The others on the connection saw nothing of it and stay open.
    expect(streams[2].events).to.have.length(1);
    expect(streams[2].isEnded).to.equal(false);
    expect(session.closed).to.equal(false);
  });

  it('frees a stream\'s slot when the client resets that stream, leaving the connection and its other streams', async () => {
    const user = await makeUser();
    const [dropped, kept] = await Promise.all([1, 2].map(() => insertGeneration(user.id, 'processing')));
    const [first, second] = await Promise.all([dropped, kept].map((id) => openSseOverHttp2(session, `/v1/generations/${id}/stream`, user.token)));
    open.push(second);
    await Promise.all([first.next(), second.next()]);
    first.destroy();
    await eventually(() => streamLeases(), (count) => count === 1);
    await changeStatus(kept, 'succeeded');
    expect(JSON.parse((await second.next()).data).status).to.equal('succeeded');
  });

  it('answers a stream with a bad token or an absent generation with the envelope, taking no slot', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'pending');
    const unauthenticated = await openSseOverHttp2(session, `/v1/generations/${id}/stream`, 'not-a-token');
    await unauthenticated.ended;
    expect(unauthenticated.status).to.equal(401);
    expect((unauthenticated.body as { error: { code: string } }).error.code).to.equal('auth_required');
    const absent = await openSseOverHttp2(session, '/v1/generations/not-a-uuid/stream', user.token);
    await absent.ended;
    expect(absent.status).to.equal(404);
    expect(await streamLeases()).to.equal(0);
  });

  it('answers a body above its limit with the envelope\'s 413 (no Connection header: HTTP/2 has none) and keeps serving the connection', async () => {
    const user = await makeUser();
    for (const length of [{ 'content-length': String(5 * 1024 * 1024) }, {}]) {
      const answer = await request(session, { ':method': 'POST', ':path': '/v1/uploads', authorization: `Bearer ${user.token}`, 'content-type': 'application/json', ...length },
        JSON.stringify({ content_type: 'image/jpeg', padding: 'x'.repeat(5 * 1024 * 1024) }));
      expect(answer.status).to.equal(413);
      expect(answer.headers.connection).to.equal(undefined);
      expect(JSON.parse(answer.body)).to.deep.equal({ error: { code: 'payload_too_large', message: 'Request body is too large.' } });
    }
    expect((await request(session, { ':path': '/healthz' })).status).to.equal(200);
  });

  it('resets a request whose body stops arriving for the request timeout, and keeps serving the connection', async () => {
    const user = await makeUser();
    const stalled = session.request({ ':method': 'POST', ':path': '/v1/devices', authorization: `Bearer ${user.token}`, 'content-type': 'application/json' }, { endStream: false });
    stalled.write('{"token": ');
    const closed = await new Promise<number>((resolve) => stalled.on('close', () => resolve(stalled.rstCode ?? -1)));
    expect(closed).to.equal(http2.constants.NGHTTP2_CANCEL);
    expect((await request(session, { ':path': '/healthz' })).status).to.equal(200);
  });

  it('keeps an open stream past the request timeout (its heartbeat is what keeps it alive)', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'processing');
    const stream = await openSseOverHttp2(session, `/v1/generations/${id}/stream`, user.token);
    open.push(stream);
    await stream.next();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(stream.isEnded).to.equal(false);
    await changeStatus(id, 'succeeded');
    expect(JSON.parse((await stream.next()).data).status).to.equal('succeeded');
  });

  it('refuses headers above 16 KB without reaching the app, and keeps serving other connections', async () => {
    const user = await makeUser();
    // Once the connection's settings are exchanged (a first request), as a load balancer's always are.
    expect((await request(session, { ':path': '/healthz' })).status).to.equal(200);
    const refused = await request(session, { ':path': '/v1/me', authorization: `Bearer ${user.token}`, 'x-padding': 'x'.repeat(20_000) })
      .then((answer) => String(answer.status), (error: Error) => error.message);
    expect(refused).to.match(/NGHTTP2_ENHANCE_YOUR_CALM/);
    const fresh = http2.connect(app.h2cUrl!);
    try {
      expect((await request(fresh, { ':path': '/v1/me', authorization: `Bearer ${user.token}` })).status).to.equal(200);
    } finally {
      fresh.destroy();
    }
  });

  it('at shutdown ends the open streams and closes the connection (GOAWAY), well within the drain timeout', async () => {
    const own = await startTestApp({ config: { H2C_PORT: '0' } });
    const client = http2.connect(own.h2cUrl!);
    try {
      const user = await makeUser();
      const id = await insertGeneration(user.id, 'processing');
      const stream = await openSseOverHttp2(client, `/v1/generations/${id}/stream`, user.token);
      await stream.next();
      const goaway = new Promise<void>((resolve) => client.once('goaway', () => resolve()));
      const started = Date.now();
      await own.close();
      expect(Date.now() - started).to.be.below(5000);
      expect(await stream.endsWithin(1000)).to.equal(true);
      await goaway;
      await eventually(() => client.closed || client.destroyed, (closed) => closed);
    } finally {
      client.destroy();
    }
  });
});
