import type { IncomingHttpHeaders } from 'node:http';
import { ResultTooLargeError, type ProviderResult } from './adapter';
import { AnswerTooLargeError, download, exchange, isSuccess, NoAnswerError } from '../outbound-http';

/**
 * What every provider adapter does the same way: one call as one `exchange` (no retry of its own:
 * a retry is the pool's decision, which keeps its slot accounting), the answer's JSON, a 429's wait,
 * a result's download.
 */

/** A call that got no answer; `sent`: the request may have reached the provider. */
export interface NoAnswer {
  kind: 'unavailable';
  reason: string;
  sent: boolean;
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as JSON, null when it is not JSON. */
  body: unknown;
}

export interface ProviderCall {
  method: 'GET' | 'POST' | 'PUT';
  headers: Record<string, string>;
  body?: { contentType: string; data: string | Buffer };
  timeoutMs: number;
  /** An answer longer than this is no answer (a list of predictions, a JWKS: never megabytes). */
  maxBytes?: number;
}

const DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024;

export async function callProvider(url: string, call: ProviderCall): Promise<Answer | NoAnswer> {
  try {
    const response = await exchange(url, {
      method: call.method,
      headers: { accept: 'application/json', ...call.headers, ...(call.body === undefined ? {} : { 'content-type': call.body.contentType }) },
      body: call.body?.data,
      timeoutMs: call.timeoutMs,
      maxBytes: call.maxBytes ?? DEFAULT_MAX_ANSWER_BYTES,
    });
    return { status: response.status, headers: response.headers, body: parseJson(response.body.toString()) };
  } catch (error) {
    if (error instanceof NoAnswerError) return { kind: 'unavailable', reason: error.message, sent: error.sent };
    throw error;
  }
}

export function isNoAnswer(answer: Answer | NoAnswer): answer is NoAnswer {
  return 'kind' in answer;
}

/** A final 4xx; 408 and 429 only mean "not now". */
export function isRefusal(status: number): boolean {
  return status >= 400 && status < 500 && status !== 408 && status !== 429;
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)[name] : undefined;
}

export function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** Cooldown for a 429 that does not say how long to wait. */
export const DEFAULT_RETRY_AFTER_S = 5;

/** Retry-After is either seconds or an HTTP date; a 429 always means waiting at least a second. */
export function retryAfterSeconds(header: string | undefined): number {
  if (header === undefined || header.trim() === '') return DEFAULT_RETRY_AFTER_S;
  const seconds = /^\d+(\.\d+)?$/.test(header.trim()) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
  return Number.isNaN(seconds) ? DEFAULT_RETRY_AFTER_S : Math.max(1, Math.ceil(seconds));
}

function mediaType(header: string | undefined): string {
  const type = header?.split(';')[0].trim().toLowerCase();
  return type || 'application/octet-stream';
}

/** The largest result file taken by default (a provider's video is tens of MB; a runaway answer must not fill the worker's memory). */
export const DEFAULT_RESULT_MAX_BYTES = 512 * 1024 * 1024;

/** A result file's bytes; throws when the download fails, `ResultTooLargeError` when it is larger than `maxBytes`. */
export async function downloadResult(url: string, options: { timeoutMs: number; maxBytes: number; headers?: Record<string, string> }): Promise<ProviderResult> {
  const response = await download(url, options).catch((error: unknown) => {
    throw error instanceof AnswerTooLargeError ? new ResultTooLargeError(error.message) : error;
  });
  if (!isSuccess(response.status)) throw new Error(`result download answered HTTP ${response.status}`);
  return { body: response.body, contentType: mediaType(response.headers['content-type']) };
}
