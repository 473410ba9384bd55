import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';

export interface Exchange {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Network errors that mean the request never left: nothing can exist at the other end because of it. */
const notSentCodes = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** A call that got no whole answer. `sent`: the request may have reached the other end (a timeout always may). */
export class NoAnswerError extends Error {
  constructor(message: string, readonly sent: boolean, readonly timedOut: boolean) {
    super(message);
    this.name = timedOut ? 'TimeoutError' : 'NoAnswerError';
  }
}

/** An answer longer than the call's `maxBytes`: cut off, never buffered whole. */
export class AnswerTooLargeError extends NoAnswerError {
  constructor(maxBytes: number) {
    super(`the answer is larger than ${maxBytes} bytes`, true, false);
    this.name = 'AnswerTooLargeError';
  }
}

export interface ExchangeOptions {
  method: 'GET' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
  /** Ends the call early (a process that stops). */
  signal?: AbortSignal;
  /** A longer answer fails as soon as it says so or grows past it. */
  maxBytes?: number;
}

/**
 * One request and its whole answer over node:http(s) and their keep-alive agents. The calls made
 * several times per generation or renewal go through here: the pool's (submit, poll, result), the
 * payment processor client's (register, charge, status) and the simulators' (the provider's task
 * callbacks and photo downloads, the payment processor's notifications). It costs
 * half the CPU of `fetch` or less (measured on loopback, 0.24-0.29 ms against 0.50-0.75 ms a
 * call, client and server; a renewal's three processor calls took 1.1 to 3.7 ms less of a worker's
 * CPU than with `fetch`). Fails with `NoAnswerError` only.
 */
export function exchange(url: string, options: ExchangeOptions): Promise<Exchange> {
  let target: URL;
  try {
    target = httpLink(url);
  } catch (error) {
    return Promise.reject(error as NoAnswerError);
  }
  const client = target.protocol === 'https:' ? https : http;
  const headers = options.body === undefined ? options.headers : { ...options.headers, 'content-length': String(Buffer.byteLength(options.body)) };
  const maxBytes = options.maxBytes ?? Infinity;
  return new Promise((resolve, reject) => {
    let timedOut = false;
    let tooLarge = false;
    const settle = () => {
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', abort);
    };
    const fail = (error: Error & { code?: string }) => {
      settle();
      if (timedOut) return reject(new NoAnswerError(`no answer within ${options.timeoutMs} ms`, true, true));
      if (tooLarge) return reject(new AnswerTooLargeError(maxBytes));
      const code = error.code ?? error.message;
      reject(new NoAnswerError(`network error: ${code}`, !notSentCodes.has(code), false));
    };
    const request = client.request(target, { method: options.method, headers }, (response) => {
      const chunks: Buffer[] = [];
      let bytes = Number(response.headers['content-length'] ?? 0);
      const refuse = () => {
        tooLarge = true;
        request.destroy(new Error('too large'));
      };
      if (bytes > maxBytes) return refuse();
      bytes = 0;
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > maxBytes) return refuse();
        chunks.push(chunk);
      });
      response.on('end', () => {
        settle();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) });
      });
      response.on('close', () => {
        if (!response.complete) fail(Object.assign(new Error('the answer was cut off'), { code: 'ECONNRESET' }));
      });
    });
    const timer = setTimeout(() => {
      timedOut = true;
      request.destroy(new Error('timed out'));
    }, options.timeoutMs);
    const abort = () => request.destroy(Object.assign(new Error('the call was ended'), { code: 'ABORTED' }));
    if (options.signal?.aborted) abort();
    else options.signal?.addEventListener('abort', abort, { once: true });
    request.on('error', fail);
    request.end(options.body);
  });
}

/** A `2xx` answer. */
export function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

/** What a download follows, as fetch does; the API calls follow none. */
const redirectStatuses = new Set([301, 302, 303, 307, 308]);
const maxRedirects = 5;

/** A GET that follows up to five redirects (a result link often points to a CDN that redirects), all within one timeout. */
export async function download(url: string, options: Omit<ExchangeOptions, 'method' | 'body'>): Promise<Exchange> {
  const deadline = Date.now() + options.timeoutMs;
  let link = url;
  for (let hop = 0; ; hop += 1) {
    const answer = await exchange(link, { ...options, method: 'GET', timeoutMs: Math.max(1, deadline - Date.now()) });
    const location = answer.headers.location;
    if (!redirectStatuses.has(answer.status) || location === undefined || hop === maxRedirects) return answer;
    link = httpLink(location, link).href;
  }
}

/** `text` as an http(s) URL (against `base` when relative); a NoAnswerError, never sent, otherwise. */
function httpLink(text: string, base?: string): URL {
  const link = URL.parse(text, base);
  if (link === null) throw new NoAnswerError('network error: not a link', false, false);
  if (link.protocol !== 'http:' && link.protocol !== 'https:') throw new NoAnswerError(`network error: no HTTP link (${link.protocol})`, false, false);
  return link;
}
