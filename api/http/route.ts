import type { Middleware } from 'koa';
import type { Access } from './authentication';
import type { ApiContext, SessionUser } from './context';
import type { ErrorCode } from './errors';
import type { IdempotencyKey, KeyPair } from '../idempotency/idempotency-key';
import type { JsonSchema } from '../../common/validation';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The statuses of a successful answer; error answers are declared by code (`Route.errors`). */
export type SuccessStatus = 200 | 201 | 202 | 204;

export interface RouteResponse {
  description: string;
  schema?: JsonSchema;
  contentType?: string;
  /** A realistic answer, shown in `/docs` (and checked against `schema` by the OpenAPI lint). */
  example?: unknown;
  /**
   * A `text/event-stream` answer's events: each event name (`message` for bare `data:` lines, as
   * Server-Sent Events name them) with the schema of its `data`, titled so that it is a named
   * schema of `/v1/openapi.json` (published as `x-sse-events`, `api/openapi.ts`).
   */
  events?: Record<string, JsonSchema>;
}

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
  /** A realistic request body, shown in `/docs` (and checked against `body` by the OpenAPI lint). */
  bodyExample?: unknown;
  /** A body the handler reads itself as it streams in (a multipart upload): published in OpenAPI, not parsed by the router. */
  streamedBody?: { contentType: string; schema: JsonSchema };
  /** Takes an optional Idempotency-Key, whose key space it shares with the other endpoints of the pair. */
  idempotent?: KeyPair;
  responses?: Partial<Record<SuccessStatus, RouteResponse>>;
  /**
   * The error answers of this endpoint, each code with when it happens. Those the declaration
   * implies (authentication, guest check, limits, validation, Idempotency-Key, 501, 500) are added
   * by `api/openapi.ts`; a code listed here replaces the implied text.
   */
  errors?: Partial<Record<ErrorCode, string>>;
  handler?: (ctx: ApiContext, input: RouteInput<Body, Query, Params>) => Promise<void>;
}

export function defineRoute<Body = unknown, Query = unknown, Params = unknown>(route: Route<Body, Query, Params>): Route {
  return route as Route;
}
