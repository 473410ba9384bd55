import http from 'node:http';
import http2 from 'node:http2';
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';

/**
 * A minimal SSE client, used by the tests, the load test and the stream benchmark: over plain
 * `http` (one socket per stream, so destroying one is abrupt and affects nothing else), or as one
 * stream of an HTTP/2 connection (`openSseOverHttp2`), the way a load balancer speaking HTTP/2 to
 * the web role's `H2C_PORT` carries many.
 */
export interface SseEvent {
  event: string | null;
  data: string;
  /** `performance.now()` when the event was parsed. */
  receivedAt: number;
}

export class SseConnection {
  readonly events: SseEvent[] = [];
  comments = 0;
  /** Set for a non-200 answer: the body as text, and parsed when JSON. */
  bodyText = '';
  ended: Promise<void>;
  onEvent: ((event: SseEvent) => void) | null = null;
  private buffer = '';
  private read = 0;
  private waiters: (() => void)[] = [];
  private finished = false;

  constructor(
    readonly status: number,
    readonly headers: http.IncomingHttpHeaders,
    response: Readable,
    /** Drops this stream without a goodbye. */
    private readonly drop: () => void,
  ) {
    response.setEncoding('utf8');
    this.ended = new Promise((resolve) => {
      const done = () => {
        if (this.finished) return;
        this.finished = true;
        this.wake();
        resolve();
      };
      response.on('end', done);
      response.on('close', done);
      response.on('error', done);
    });
    response.on('data', (chunk: string) => (status === 200 ? this.parse(chunk) : (this.bodyText += chunk)));
  }

  get body(): unknown {
    try {
      return JSON.parse(this.bodyText);
    } catch {
      return this.bodyText;
    }
  }

  get isEnded(): boolean {
    return this.finished;
  }

  /** The next event not returned before; rejects when the stream ends first or after `timeoutMs`. */
  async next(timeoutMs = 5000): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    while (this.read >= this.events.length) {
      if (this.finished) throw new Error('stream ended');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no event within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.events[this.read++];
  }

  /** Resolves true when the server ended the stream within `timeoutMs`. */
  async endsWithin(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const result = await Promise.race([this.ended.then(() => true as const), timedOut]);
    clearTimeout(timer);
    return result;
  }

  /** Drops the stream without a goodbye, like a phone losing its network (over HTTP/2: its stream reset, the connection kept). */
  destroy(): void {
    this.drop();
  }

  private parse(chunk: string): void {
    this.buffer += chunk;
    let boundary: number;
    while ((boundary = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, boundary);
      this.buffer = this.buffer.slice(boundary + 2);
      let event: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments += 1;
        else if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (!data.length) continue;
      const parsed = { event, data: data.join('\n'), receivedAt: performance.now() };
      this.events.push(parsed);
      this.onEvent?.(parsed);
    }
    this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}

export function openSse(baseUrl: string, path: string, token: string, options: { agent?: http.Agent | false; timeoutMs?: number } = {}): Promise<SseConnection> {
  const url = new URL(path, baseUrl);
  return new Promise((resolve, reject) => {
    const request = http.get(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        agent: options.agent ?? false,
        headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
        timeout: options.timeoutMs ?? 30_000,
      },
      (response) => {
        request.setTimeout(0);
        resolve(new SseConnection(response.statusCode ?? 0, response.headers, response, () => {
          response.socket?.destroy();
          response.destroy();
        }));
      },
    );
    request.on('timeout', () => request.destroy(new Error('no answer to the stream request')));
    request.on('error', reject);
  });
}

/** The same request as one stream of an HTTP/2 `session` (cleartext, prior knowledge: `http2.connect('http://…')`). */
export function openSseOverHttp2(session: http2.ClientHttp2Session, path: string, token: string, options: { timeoutMs?: number } = {}): Promise<SseConnection> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path, authorization: `Bearer ${token}`, accept: 'text/event-stream' });
    const timer = setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), options.timeoutMs ?? 30_000);
    stream.once('response', (headers) => {
      clearTimeout(timer);
      resolve(new SseConnection(Number(headers[':status']), headers, stream, () => stream.close(http2.constants.NGHTTP2_CANCEL)));
    });
    stream.once('close', () => {
      clearTimeout(timer);
      reject(new Error(`the stream closed before its answer (code ${stream.rstCode})`));
    });
    stream.once('error', reject);
  });
}
