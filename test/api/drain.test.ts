import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import { signAccessToken } from '../../api/tokens/access-token';
import { freePort, resetDatabase, serviceEnv } from '../harness';
import { insertGeneration } from '../generation-fixtures';
import { kill, spawnService, type ServiceChild } from '../service-processes';
import { makeUser } from '../users';
import { useUninterceptedHttp } from '../outside-world';
import { eventually } from '../../scripts/wait';

interface Answer {
  connection: number;
  afterSignal: boolean;
  keptAlive: boolean;
}

/**
 * One keep-alive connection as a load generator drives it: `depth` requests pipelined at all times,
 * a new one sent as each answer arrives, until the server closes the connection.
 */
function pipelinedConnection(connection: number, port: number, depth: number, answers: Answer[], signalled: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const request = 'GET /v1/effects HTTP/1.1\r\nHost: localhost\r\n\r\n';
    let buffer = Buffer.alloc(0);
    socket.on('connect', () => socket.write(request.repeat(depth)));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const headerEnd = buffer.indexOf('\r\n\r\n');
        if (headerEnd < 0) return;
        const head = buffer.subarray(0, headerEnd).toString('latin1');
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < headerEnd + 4 + length) return;
        buffer = buffer.subarray(headerEnd + 4 + length);
        answers.push({ connection, afterSignal: signalled(), keptAlive: !/^connection: *close/im.test(head) });
        if (!socket.destroyed && socket.writable) socket.write(request);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
  });
}

/** What one back-to-back client saw after the signal. */
interface ClientReport {
  answers: number;
  /** Answers that said `Connection: close`. */
  closingAnswers: number;
  /** Requests that got no whole answer, and how each ended. */
  lost: string[];
  /**
   * Its last try to connect found the port closed: refused, or reset before its first answer (a
   * connection the kernel completed just as the listener closed is reset with it, unanswered and
   * unprocessed: the client may send it elsewhere, as after a refusal).
   */
  refused: boolean;
  /** Connections it opened before the signal: one, for a client that keeps its connection alive. */
  connectionsBeforeSignal: number;
}

/** A keep-alive connection read by hand: each request's whole answer, or how the connection ended first. */
class RawConnection {
  private buffer = Buffer.alloc(0);
  private waiting: (() => void) | null = null;
  private ended: string | null = null;
  /** Requests sent on this connection. */
  sent = 0;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.waiting?.();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.ended ??= error.code ?? error.message;
    });
    this.closed = new Promise((resolve) => socket.on('close', () => {
      this.ended ??= 'closed';
      this.waiting?.();
      resolve();
    }));
  }

  /** A new connection, or null when the port refuses it. */
  static open(port: number): Promise<RawConnection | null> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => resolve(new RawConnection(socket)));
      socket.once('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNREFUSED' ? resolve(null) : reject(error)));
    });
  }

  /** Sends one request; its answer's `Connection: close`, or how the connection ended before a whole answer came. */
  async exchange(request: string): Promise<{ close: boolean } | { lost: string }> {
    if (this.ended) return { lost: `${this.ended} before the request was sent` };
    this.sent += 1;
    this.socket.write(request);
    for (;;) {
      const headerEnd = this.buffer.indexOf('\r\n\r\n');
      if (headerEnd >= 0) {
        const head = this.buffer.subarray(0, headerEnd).toString('latin1');
        const length = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
        if (this.buffer.length >= headerEnd + 4 + length) {
          this.buffer = this.buffer.subarray(headerEnd + 4 + length);
          return { close: /^connection: *close/im.test(head) };
        }
      }
      if (this.ended) return { lost: this.ended };
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/**
 * A client that sends its next request the moment an answer arrives, on one keep-alive connection;
 * after an answer that says close it waits for the server to close the connection and connects
 * again, until the port refuses it.
 */
async function backToBackClient(port: number, signalled: () => boolean): Promise<ClientReport> {
  const report: ClientReport = { answers: 0, closingAnswers: 0, lost: [], refused: false, connectionsBeforeSignal: 0 };
  const request = 'GET /v1/effects HTTP/1.1\r\nHost: localhost\r\n\r\n';
  for (;;) {
    const connection = await RawConnection.open(port);
    if (!connection) {
      report.refused = true;
      return report;
    }
    if (!signalled()) report.connectionsBeforeSignal += 1;
    for (;;) {
      const outcome = await connection.exchange(request);
      if ('lost' in outcome && connection.sent === 1 && signalled()) {
        report.refused = true;
        connection.destroy();
        return report;
      }
      if ('lost' in outcome) {
        report.lost.push(outcome.lost);
        connection.destroy();
        break;
      }
      if (signalled()) {
        report.answers += 1;
        if (outcome.close) report.closingAnswers += 1;
      }
      if (outcome.close) {
        await connection.closed;
        break;
      }
    }
  }
}

/**
 * The same with Node's http client, its keep-alive agent holding one socket: the connection is the
 * client's own, as a raw socket's. (A pool shared by many callers, fetch's, may send on a connection
 * that sat idle, which a server closes at some point: its client retries a request that failed on a
 * reused connection, as Node's documentation of `reusedSocket` says.) Under nock's interception the
 * agent is bypassed and each request opens a connection (`useUninterceptedHttp`): one opened as the
 * listener closes is refused before any answer could say close.
 */
async function backToBackAgent(port: number, signalled: () => boolean): Promise<ClientReport> {
  const report: ClientReport = { answers: 0, closingAnswers: 0, lost: [], refused: false, connectionsBeforeSignal: 0 };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (;;) {
      const outcome = await new Promise<{ close: boolean } | { error: string; reused: boolean }>((resolve) => {
        const request = http.get({ host: '127.0.0.1', port, path: '/v1/effects', agent }, (response) => {
          response.resume();
          response.on('end', () => resolve({ close: response.headers.connection === 'close' }));
          response.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message, reused: request.reusedSocket }));
        });
        request.on('socket', () => {
          if (!request.reusedSocket && !signalled()) report.connectionsBeforeSignal += 1;
        });
        request.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message, reused: request.reusedSocket }));
      });
      if ('error' in outcome) {
        if (outcome.error === 'ECONNREFUSED' || (!outcome.reused && signalled())) report.refused = true;
        else report.lost.push(outcome.error);
        return report;
      }
      if (signalled()) {
        report.answers += 1;
        if (outcome.close) report.closingAnswers += 1;
      }
    }
  } finally {
    agent.destroy();
  }
}

describe('a web process stopping under keep-alive traffic', function () {
  this.timeout(60_000);
  useUninterceptedHttp();
  let web: ServiceChild | null = null;
  before(() => resetDatabase());
  after(async () => {
    if (web) await kill(web);
  });

  it('answers Connection: close once stopping, closes each connection after its response, ends its streams, and exits 0 well within 25 s', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // A web process beside a configured database runs no provider simulator (main.ts); this one is never called.
    web = spawnService(['web'], { PORT: String(port), PROVIDER_URL: 'http://127.0.0.1:9' });
    await eventually(() => fetch(`${url}/readyz`).then((answer) => answer.status, () => 0), (status) => status === 200, 60_000);

    // An open generation stream: the server must end it.
    const user = await makeUser({ guest: true });
    const generationId = await insertGeneration(user.id, 'processing');
    const token = await signAccessToken(serviceEnv().TOKEN_SECRET, user.id, 3600);
    const stream = await fetch(`${url}/v1/generations/${generationId}/stream`, { headers: { authorization: `Bearer ${token}` } });
    expect(stream.status).to.equal(200);
    const streamEnded = stream.text().then(() => true, () => true);

    // Sixteen keep-alive connections with four requests pipelined on each, as a load generator sends them.
    const connections = 16;
    const depth = 4;
    const answers: Answer[] = [];
    let signalledAt = 0;
    const clients = Array.from({ length: connections }, (_, connection) => pipelinedConnection(connection, port, depth, answers, () => signalledAt > 0));
    await eventually(() => answers.length, (count) => count > 500, 20_000);
    signalledAt = Date.now();
    web.process.kill('SIGTERM');
    const code = await web.exited;
    const tookMs = Date.now() - signalledAt;
    await Promise.all(clients);
    const afterSignal = answers.filter((answer) => answer.afterSignal);

    expect(code, 'exit code').to.equal(0);
    expect(tookMs, 'time to exit').to.be.below(10_000);
    expect(await streamEnded).to.equal(true);
    // Each connection gets the answers it was already waiting for, and then is closed: a handful, not
    // thousands. Answers written before the signal was handled may still be on the way (at most the
    // pipeline's depth per connection, and one round more while a loaded machine delivers the signal);
    // after an answer that says close, nothing comes.
    expect(afterSignal.length, 'answers after the signal').to.be.at.most(2 * connections * depth);
    for (let connection = 0; connection < connections; connection += 1) {
      const own = afterSignal.filter((answer) => answer.connection === connection);
      expect(own.filter((answer) => answer.keptAlive).length, `connection ${connection}: answers after the signal that kept it open`).to.be.at.most(2 * depth);
      const closedAt = own.findIndex((answer) => !answer.keptAlive);
      if (closedAt >= 0) expect(own.length - 1, `connection ${connection}: answers after the one that said close`).to.equal(closedAt);
    }
  });

  it('loses no request of clients sending back to back on keep-alive connections (raw sockets and a node:http keep-alive agent): each gets its answers, the last one says close, then the connection closes and the port refuses (or resets a connection it never accepted)', async () => {
    const port = await freePort();
    web = spawnService(['web'], { PORT: String(port), PROVIDER_URL: 'http://127.0.0.1:9' });
    await eventually(() => fetch(`http://127.0.0.1:${port}/readyz`).then((answer) => answer.status, () => 0), (status) => status === 200, 60_000);

    let signalledAt = 0;
    const signalled = () => signalledAt > 0;
    const reports = [
      ...Array.from({ length: 8 }, () => backToBackClient(port, signalled)),
      ...Array.from({ length: 8 }, () => backToBackAgent(port, signalled)),
    ];
    await new Promise((resolve) => setTimeout(resolve, 1000));
    signalledAt = Date.now();
    web.process.kill('SIGTERM');
    const code = await web.exited;
    const seen = await Promise.all(reports);

    expect(code, 'exit code').to.equal(0);
    expect(seen.flatMap((report) => report.lost), 'requests without a whole answer').to.deep.equal([]);
    seen.forEach((report, client) => {
      expect(report.connectionsBeforeSignal, `client ${client}: connections it opened before the signal`).to.equal(1);
      expect(report.closingAnswers, `client ${client}: answers that said close`).to.be.at.least(1);
      expect(report.refused, `client ${client}: the port refused at the end`).to.equal(true);
    });
  });
});
