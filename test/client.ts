import { checkAgainstContract } from './contract';

/**
 * A small HTTP client for tests: real requests, parsed answers, each held to what
 * `/v1/openapi.json` documents for its operation (`test/contract.ts`).
 */
export interface Answer<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  headers?: Record<string, string>;
  /** A raw body sent as is (for malformed JSON and size tests). */
  raw?: string | Buffer;
}

export interface ClientOptions {
  /** `false` for a listener that is not the API (the metrics port). */
  checkContract?: boolean;
  /** Runs before each request is sent. */
  beforeRequest?: (method: string, path: string) => Promise<void> | undefined;
}

export function client(baseUrl: string, clientOptions: ClientOptions = {}) {
  const checkContract = clientOptions.checkContract ?? true;
  async function request<T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<Answer<T>> {
    await clientOptions.beforeRequest?.(method, path);
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let payload: string | Buffer | undefined;
    if (options.raw !== undefined) {
      payload = options.raw;
      headers['content-type'] ??= 'application/json';
    } else if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    const response = await fetch(baseUrl + path, { method, headers, body: payload, redirect: 'manual' });
    const text = await response.text();
    let parsed: unknown = text;
    const contentType = response.headers.get('content-type') ?? '';
    if (contentType.includes('json') && text) parsed = JSON.parse(text);
    if (checkContract) checkAgainstContract(method, path, response.status, contentType, parsed);
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }
  return {
    request,
    get: <T = any>(path: string, options?: RequestOptions) => request<T>('GET', path, undefined, options),
    post: <T = any>(path: string, body?: unknown, options?: RequestOptions) => request<T>('POST', path, body ?? {}, options),
    put: <T = any>(path: string, body?: unknown, options?: RequestOptions) => request<T>('PUT', path, body ?? {}, options),
    patch: <T = any>(path: string, body?: unknown, options?: RequestOptions) => request<T>('PATCH', path, body ?? {}, options),
    delete: <T = any>(path: string, options?: RequestOptions) => request<T>('DELETE', path, undefined, options),
  };
}

export type Api = ReturnType<typeof client>;
