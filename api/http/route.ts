import type { Middleware } from 'koa';
import type { Access } from './authentication';
import type { ApiContext, SessionUser } from './context';
import type { IdempotencyKey, KeyPair } from './idempotency';
import type { JsonSchema } from './validation';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteInput<Body, Query, Params> {
  body: Body;
  query: Query;
  params: Params;
  user: SessionUser | null;
  /** On a route declared `idempotent`: the request's Idempotency-Key, or null without one. */
  idempotency: IdempotencyKey | null;
}

/**
 * One contract endpoint: who may call it, what it accepts (the schemas that validate and that
 * `/v1/openapi.json` publishes), which limits apply, and the handler. A route without a handler
 * answers `501 not_implemented` after authentication and the guest check.
 */
export interface Route<Body = unknown, Query = unknown, Params = unknown> {
  method: Method;
  /** OpenAPI-style path, `/v1/effects/{id}`. */
  path: string;
  summary: string;
  access: Access;
  /** Middleware run after authentication and before validation (rate limits, budgets). */
  limits?: Middleware<ApiContext['state'], ApiContext>[];
  /** Path parameters beyond plain strings (every `{name}` of the path is one by default). */
  params?: JsonSchema;
  query?: JsonSchema;
  body?: JsonSchema;
  /** A body the handler reads itself as it streams in (a multipart upload): published in OpenAPI, not parsed by the router. */
  streamedBody?: { contentType: string; schema: JsonSchema };
  /** Takes an optional Idempotency-Key, whose key space it shares with the other endpoints of the pair. */
  idempotent?: KeyPair;
  responses?: Record<number, { description: string; schema?: JsonSchema; contentType?: string }>;
  handler?: (ctx: ApiContext, input: RouteInput<Body, Query, Params>) => Promise<void>;
}

export function defineRoute<Body = unknown, Query = unknown, Params = unknown>(route: Route<Body, Query, Params>): Route {
  return route as Route;
}
