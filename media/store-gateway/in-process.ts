import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { PassThrough, Writable } from 'node:stream';

/**
 * The store's own request handler (s3rver's Koa callback), served in the gateway's process: a
 * checked request is handed to it as a request object, not sent over a second HTTP connection.
 * It resolves once the store has handled the request (its answer may still be streaming).
 */
export type StoreHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/**
 * A request for the store whose body the gateway has already read (to check it): on the same
 * connection, the body replayed from memory.
 */
export function requestWithBody(
  from: IncomingMessage,
  request: { method: string; url: string; headers: IncomingHttpHeaders },
  body: Buffer,
): IncomingMessage {
  const replayed = new PassThrough();
  replayed.end(body);
  return Object.assign(replayed, {
    method: request.method,
    url: request.url,
    headers: { ...request.headers, 'content-length': String(body.length) },
    httpVersion: from.httpVersion,
    httpVersionMajor: from.httpVersionMajor,
    httpVersionMinor: from.httpVersionMinor,
    socket: from.socket,
    complete: true,
  }) as unknown as IncomingMessage;
}

/** What the store answered to a request the gateway made of its own. */
export interface StoreAnswer {
  statusCode: number;
  headers: OutgoingHttpHeaders;
  /** An error's XML, or nothing. */
  body: Buffer;
}

/** Asks the store; resolves once the store has written the whole answer. */
export async function askStore(store: StoreHandler, request: IncomingMessage): Promise<StoreAnswer> {
  const answer = new KeptAnswer();
  const written = new Promise<void>((resolve) => answer.once('finish', resolve));
  await store(request, answer as unknown as ServerResponse);
  await written;
  return { statusCode: answer.statusCode, headers: answer.getHeaders(), body: Buffer.concat(answer.chunks) };
}

/** The part of a `ServerResponse` a Koa application writes to, kept in memory. */
class KeptAnswer extends Writable {
  statusCode = 200;
  statusMessage = '';
  readonly chunks: Buffer[] = [];
  private readonly headers = new Map<string, OutgoingHttpHeader>();
  private started = false;

  /** Read by Koa and `on-finished` as an outgoing message's. */
  get finished(): boolean {
    return this.writableEnded;
  }

  get headersSent(): boolean {
    return this.started;
  }

  setHeader(name: string, value: OutgoingHttpHeader): this {
    this.headers.set(name.toLowerCase(), value);
    return this;
  }

  getHeader(name: string): OutgoingHttpHeader | undefined {
    return this.headers.get(name.toLowerCase());
  }

  getHeaders(): OutgoingHttpHeaders {
    return Object.fromEntries(this.headers);
  }

  getHeaderNames(): string[] {
    return [...this.headers.keys()];
  }

  hasHeader(name: string): boolean {
    return this.headers.has(name.toLowerCase());
  }

  removeHeader(name: string): void {
    this.headers.delete(name.toLowerCase());
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.started = true;
    this.chunks.push(chunk);
    done();
  }

  override _final(done: () => void): void {
    this.started = true;
    done();
  }
}
