import { expect } from 'chai';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { discardBoundBytes } from '../../../api/http/body-too-large';
import { resetDatabase, startTestApp, useTestApp, type TestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';
import { operatorHeaders, opsConfig } from '../ops/ops-fixtures';

const megabyte = 1024 * 1024;
const jsonLimitBytes = megabyte;
const recordingLimitBytes = 10 * megabyte;
const tooLargeBody = { error: { code: 'payload_too_large', message: 'Request body is too large.' } };
const tooLargeRecording = { error: { code: 'payload_too_large', message: 'The recording is larger than 10 MB.' } };

/** What a raw-socket client saw: the answer's head and body, and how its writes ended. */
interface RawOutcome {
  head: string;
  body: string;
  writeError: string | null;
  /** Bytes of the request that left the client before its writes ended. */
  sent: number;
  /** The server closed the connection after its answer (within 10 s). */
  serverClosed: boolean;
}

/**
 * A client on a bare socket (no HTTP library) that writes its whole request, `prefix`, `bytes` of
 * filler in pieces of 256 KB and `suffix` (each a chunk when `chunked`), before it looks at the
 * answer (as Node's fetch does), then reads until the server closes the connection (10 s at most).
 */
async function rawRequest(url: string, head: string, body: { bytes: number; chunked?: boolean; prefix?: string; suffix?: string }): Promise<RawOutcome> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
  let writeError: string | null = null;
  socket.on('error', (error: NodeJS.ErrnoException) => (writeError ??= error.code ?? error.message));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  const frame = (bytes: Buffer) => (body.chunked ? Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]) : bytes);
  const write = (bytes: Buffer) => new Promise<void>((resolve) => {
    if (socket.destroyed) return resolve();
    socket.write(bytes, (error) => {
      if (error) writeError ??= (error as NodeJS.ErrnoException).code ?? error.message;
      resolve();
    });
  });

  await write(Buffer.from(head));
  if (body.prefix) await write(frame(Buffer.from(body.prefix)));
  const piece = Buffer.alloc(256 * 1024, 0x61);
  for (let sent = 0; sent < body.bytes && !writeError && !socket.destroyed; sent += piece.length) {
    await write(frame(piece.subarray(0, Math.min(piece.length, body.bytes - sent))));
  }
  if (body.suffix) await write(frame(Buffer.from(body.suffix)));
  if (body.chunked) await write(Buffer.from('0\r\n\r\n'));
  const sent = socket.bytesWritten;
  const serverClosed = await Promise.race([closed.then(() => true), delay(10_000).then(() => false)]);
  socket.destroy();
  const text = received.toString('latin1');
  const headEnd = text.indexOf('\r\n\r\n');
  return { head: headEnd < 0 ? text : text.slice(0, headEnd), body: headEnd < 0 ? '' : text.slice(headEnd + 4), writeError, sent, serverClosed };
}

/** What Node's fetch got: the answer, or the code of the error it failed with. */
type FetchOutcome = { status: number; connection: string | null; body: unknown } | { error: string };

/**
 * One request with Node's fetch from a process of its own, as a phone's SDK or a script would send
 * it: in the test's own process, the server's reads and the client's writes take turns on one event
 * loop, which hides the race in which the server closes the connection under the client's writes.
 * `body` is JSON or a form of `bytes`, or a multipart recording of `bytes` in `audio`.
 */
function fetchFromAnotherProcess(url: string, init: { method: string; headers: Record<string, string>; body: { kind: 'json' | 'form' | 'recording'; bytes: number } }): Promise<FetchOutcome> {
  const script = `
    const { url, method, headers, body } = JSON.parse(process.argv[1]);
    const filler = 'x'.repeat(body.bytes);
    let payload;
    if (body.kind === 'json') payload = JSON.stringify({ content_type: 'image/jpeg', object_key: filler });
    else if (body.kind === 'form') payload = 'csrf=' + filler;
    else {
      payload = new FormData();
      payload.append('audio', new Blob([Buffer.alloc(body.bytes)]), 'recording.wav');
    }
    fetch(url, { method, headers, body: payload })
      .then(async (answer) => ({ status: answer.status, connection: answer.headers.get('connection'), body: await answer.json() }))
      .catch((error) => ({ error: error.cause?.code ?? String(error) }))
      .then((outcome) => process.stdout.write(JSON.stringify(outcome)));`;
  const child = spawn(process.execPath, ['-e', script, JSON.stringify({ url, ...init })], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', () => resolve(JSON.parse(output) as FetchOutcome)));
}

function expectTooLarge(outcome: RawOutcome, envelope: object): void {
  expect(outcome.writeError, 'the client wrote its whole request').to.equal(null);
  expect(outcome.head).to.match(/^HTTP\/1\.1 413 /);
  expect(outcome.head).to.match(/^connection: close\r?$/im);
  expect(outcome.head).to.match(/^x-request-id: \S+\r?$/im);
  expect(JSON.parse(outcome.body)).to.deep.equal(envelope);
  expect(outcome.serverClosed, 'the server closed the connection after its answer').to.equal(true);
}

/** A multipart/form-data body with one file of `bytes` in `audio`, as its prefix and suffix around the file's bytes. */
function multipartFraming(boundary: string): { prefix: string; suffix: string } {
  return {
    prefix: `--${boundary}\r\ncontent-disposition: form-data; name="audio"; filename="big.wav"\r\ncontent-type: audio/wav\r\n\r\n`,
    suffix: `\r\n--${boundary}--\r\n`,
  };
}

describe('a request body above its limit', function () {
  this.timeout(60_000);
  const t = useTestApp({ config: opsConfig });
  let user: TestUser;
  beforeEach(async () => {
    await resetDatabase();
    user = await makeUser();
  });

  /** Every route with a JSON or form body goes through one parser; these are the upload tickets and a console form. */
  const bodyRoutes = [
    { name: 'a photo upload ticket', method: 'POST', path: '/v1/uploads', type: 'application/json' },
    { name: 'an avatar upload ticket', method: 'POST', path: '/v1/me/avatar/upload-url', type: 'application/json' },
    { name: 'binding an avatar', method: 'PUT', path: '/v1/me/avatar', type: 'application/json' },
    { name: 'an operator console form', method: 'POST', path: '/ops/failed/replay', type: 'application/x-www-form-urlencoded' },
  ];
  const headersOf = (route: (typeof bodyRoutes)[number]): Record<string, string> => ({
    'content-type': route.type,
    ...(route.path.startsWith('/ops') ? operatorHeaders : { authorization: `Bearer ${user.token}` }),
  });
  /** The same bodies as `fetchFromAnotherProcess` sends. */
  const bodyOf = (route: (typeof bodyRoutes)[number], bytes: number) => (route.type === 'application/json'
    ? JSON.stringify({ content_type: 'image/jpeg', object_key: 'x'.repeat(bytes) })
    : `csrf=${'x'.repeat(bytes)}`);

  describe('Node\'s fetch, from another process (it writes the whole body before it reads): the 413 is read, not EPIPE', () => {
    for (const route of bodyRoutes) {
      it(`${route.name}: 2 MB and 5 MB`, async () => {
        for (const bytes of [2 * megabyte, 5 * megabyte]) {
          const kind = route.type === 'application/json' ? 'json' : 'form';
          const outcome = await fetchFromAnotherProcess(t.app.url + route.path, { method: route.method, headers: headersOf(route), body: { kind, bytes } });
          expect(outcome, `${bytes / megabyte} MB`).to.deep.equal({ status: 413, connection: 'close', body: tooLargeBody });
        }
      });
    }

    it('a 12 MB recording to POST /v1/speech/transcriptions, three times', async () => {
      for (let attempt = 0; attempt < 3; attempt += 1) {
        const outcome = await fetchFromAnotherProcess(`${t.app.url}/v1/speech/transcriptions`, {
          method: 'POST', headers: { authorization: `Bearer ${user.token}` }, body: { kind: 'recording', bytes: 12 * megabyte },
        });
        expect(outcome, `attempt ${attempt + 1}`).to.deep.equal({ status: 413, connection: 'close', body: tooLargeRecording });
      }
    });
  });

  describe('a raw socket that writes the whole body before it reads: the answer, then the server closes the connection', () => {
    for (const route of bodyRoutes) {
      it(`${route.name}: 5 MB with Content-Length, and chunked`, async () => {
        const body = bodyOf(route, 5 * megabyte);
        const headers = Object.entries(headersOf(route)).map(([name, value]) => `${name}: ${value}\r\n`).join('');
        const start = `${route.method} ${route.path} HTTP/1.1\r\nHost: localhost\r\n${headers}`;
        expectTooLarge(await rawRequest(t.app.url, `${start}Content-Length: ${body.length}\r\n\r\n`, { bytes: 0, prefix: body }), tooLargeBody);
        expectTooLarge(await rawRequest(t.app.url, `${start}Transfer-Encoding: chunked\r\n\r\n`, { bytes: 0, prefix: body, chunked: true }), tooLargeBody);
      });
    }

    it('a 12 MB recording, with Content-Length (refused by it at once) and chunked (refused when it passes 10 MB)', async () => {
      const boundary = 'raw-boundary-0123';
      const framing = multipartFraming(boundary);
      const bytes = 12 * megabyte;
      const start = `POST /v1/speech/transcriptions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${user.token}\r\n`
        + `Content-Type: multipart/form-data; boundary=${boundary}\r\n`;
      const length = framing.prefix.length + bytes + framing.suffix.length;
      expectTooLarge(await rawRequest(t.app.url, `${start}Content-Length: ${length}\r\n\r\n`, { bytes, ...framing }), tooLargeRecording);
      expectTooLarge(await rawRequest(t.app.url, `${start}Transfer-Encoding: chunked\r\n\r\n`, { bytes, ...framing, chunked: true }), tooLargeRecording);
    });
  });

  describe('past the bound: the connection is cut, so no client makes the server read gigabytes', () => {
    // What the kernel's socket buffers on both sides may hold beyond what the server read.
    const buffersBytes = 16 * megabyte;

    it('a JSON body declaring 4 GB: cut after its limit and the bound, the answer already sent', async () => {
      const outcome = await rawRequest(t.app.url, `POST /v1/uploads HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${user.token}\r\n`
        + `Content-Type: application/json\r\nContent-Length: ${4 * 1024 * megabyte}\r\n\r\n`, { bytes: 4 * 1024 * megabyte });
      expect(outcome.writeError, 'the server cut the connection').to.be.oneOf(['EPIPE', 'ECONNRESET']);
      expect(outcome.sent).to.be.below(jsonLimitBytes + discardBoundBytes(jsonLimitBytes) + buffersBytes);
      expect(outcome.head, 'a client reading while it sends has the answer').to.match(/^HTTP\/1\.1 413 /);
    });

    it('a chunked recording of 1 GB: cut after 10 MB and the bound', async () => {
      const boundary = 'raw-boundary-4567';
      const outcome = await rawRequest(t.app.url, `POST /v1/speech/transcriptions HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${user.token}\r\n`
        + `Content-Type: multipart/form-data; boundary=${boundary}\r\nTransfer-Encoding: chunked\r\n\r\n`, { bytes: 1024 * megabyte, chunked: true, ...multipartFraming(boundary) });
      expect(outcome.writeError, 'the server cut the connection').to.be.oneOf(['EPIPE', 'ECONNRESET']);
      expect(outcome.sent).to.be.below(recordingLimitBytes + discardBoundBytes(recordingLimitBytes) + buffersBytes);
      expect(outcome.head).to.match(/^HTTP\/1\.1 413 /);
    });
  });

  it('past the request timeout: a client that sends the rest too slowly is cut', async () => {
    const slow: TestApp = await startTestApp({ config: { REQUEST_TIMEOUT_MS: '1000' } });
    try {
      const { port } = new URL(slow.url);
      const socket = net.connect(Number(port), '127.0.0.1');
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      const closed = new Promise((resolve) => socket.once('close', resolve));
      socket.write(`POST /v1/uploads HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${user.token}\r\nContent-Type: application/json\r\nContent-Length: ${2 * megabyte}\r\n\r\n`);
      const started = Date.now();
      const trickle = setInterval(() => socket.write(Buffer.alloc(1024, 0x61)), 100);
      await closed;
      clearInterval(trickle);
      expect(received).to.match(/^HTTP\/1\.1 413 /);
      expect(Date.now() - started, 'cut within the timeout and one check of it').to.be.below(4000);
    } finally {
      await slow.close();
    }
  });
});
