import { errorCodes, errors, type ErrorCode } from './http/errors';
import { idempotencyKeyParameter, pairConflicts } from './idempotency/idempotency-key';
import type { Route } from './http/route';
import { type JsonSchema } from '../common/validation';
import { pathSchema } from './http/validation';
import { apiGuide } from './openapi-guide';

/**
 * The machine-readable contract (OpenAPI 3.1), generated from the route table and schemas that
 * validate requests, so a route is documented completely by declaring it: `operationId` from method
 * and path (`getGenerationsById`), the tag from the first path segment, path parameters from the
 * path, the error answers its declaration implies plus its domain codes (`route.errors`) with an
 * example each, titled schemas as `components/schemas`, and for a stream `x-sse-events` mapping each
 * event name to its data's schema (OpenAPI 3.1 has no field for the items of a stream).
 */

const errorEnvelopeSchema: JsonSchema = {
  title: 'Error',
  description: 'The error envelope: `code` is the stable machine identifier; `message` is for people and may change.',
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', description: 'One of the codes in "Errors" above.' },
        message: { type: 'string' },
      },
      required: ['code', 'message'],
    },
  },
  required: ['error'],
};

const validationErrorSchema: JsonSchema = {
  title: 'ValidationError',
  description: 'A `422`: the envelope with `details`, one entry per failed field; the value sent is never echoed.',
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', enum: ['validation_error', 'characters_required'] },
        message: { type: 'string' },
        details: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              loc: {
                type: 'array',
                items: { type: ['string', 'integer'] },
                description: 'Where: `body`, `query`, `path` or `header`, then the field names and array indexes.',
              },
              msg: { type: 'string' },
              type: { type: 'string', description: 'The rule that failed: `required`, `maxLength`, `pattern`, `invalid_status`, …' },
            },
            required: ['loc', 'msg', 'type'],
          },
        },
      },
      required: ['code', 'message', 'details'],
    },
  },
  required: ['error'],
};

/** Tags by the first path segment after `/v1`: the sections of `/docs`, in this order. */
const tags: Record<string, { name: string; description: string }> = {
  auth: { name: 'Sign-in', description: 'Guest accounts, email and identity-provider sign-in, token refresh and sign-out. Every sign-in answers a TokenResponse.' },
  me: { name: 'Profile', description: 'The signed-in user: profile, language, avatar, account deletion. Open to guests.' },
  referral: { name: 'Referrals', description: 'Own referral code, share link and statistics (registered accounts).' },
  credits: { name: 'Credits', description: 'Balance and credit history: every charge, refund, purchase and bonus is one record.' },
  categories: { name: 'Catalog', description: 'The public, localized catalog: categories, effects, tags, authors, complaints.' },
  effects: { name: 'Catalog', description: '' },
  tags: { name: 'Catalog', description: '' },
  authors: { name: 'Catalog', description: '' },
  uploads: { name: 'Uploads', description: 'Photos for generations: a presigned POST ticket, then a direct upload to object storage.' },
  generations: { name: 'Generations', description: 'Generations from an effect and photos: create, follow (SSE stream or push), fetch the result, hide, cancel.' },
  studio: { name: 'Studio', description: 'Task-based generations from a prompt, with or without photos, through the same pipeline as effects.' },
  speech: { name: 'Voice input', description: 'Speech to text for the prompt field (registered accounts).' },
  devices: { name: 'Push devices', description: 'Push tokens of the app installations (FCM and APNs).' },
  payments: { name: 'Payments', description: 'Credit packs sold through the external payment processor, which hosts the payment page.' },
  offers: { name: 'Special offers', description: 'Time-limited discounted products shown after the main paywall is closed (registered accounts).' },
  subscriptions: { name: 'Subscriptions', description: 'Plans charged to a saved card every period, each period granting plan credits that burn at its end: list the plans, subscribe (the first period is paid on the processor page, like a payment), follow, cancel with a reason.' },
  'user-effects': { name: 'Marketplace', description: 'Effects made by users: submit a prompt and a sample photo, follow the moderation, keep it private or publish it in the community category, earn a share of every paid launch.' },
};

function tagOf(route: Route): { name: string; description?: string } {
  const segment = route.path.split('/')[2];
  // An unknown segment gets a tag without a description: the lint in `npm test` asks for one here.
  return tags[segment] ?? { name: segment };
}

/** `GET /v1/generations/{id}/stream` → `getGenerationsByIdStream`: unique because method and path are. */
function operationIdOf(route: Route): string {
  const words = route.path.split('/').slice(2).flatMap((segment) => {
    const parameter = /^\{(.+)\}$/.exec(segment);
    return parameter ? ['by', ...parameter[1].split(/[^A-Za-z0-9]+/)] : segment.split(/[^A-Za-z0-9]+/);
  });
  const pascal = words.filter(Boolean).map((word) => word[0].toUpperCase() + word.slice(1)).join('');
  return route.method.toLowerCase() + pascal;
}

function parameters(schema: JsonSchema | undefined, where: 'query' | 'path'): unknown[] {
  if (!schema) return [];
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema: property,
  }));
}

/** Any operation may meet a database outage or a stopping process: the contract's one 503 code. */
const briefOutage = 'The service is briefly unavailable (its database unreachable, or this process stopping): retry after `Retry-After` seconds.';

/** The error answers a route's declaration implies, with when each happens. */
function impliedErrors(route: Route): Partial<Record<ErrorCode, string>> {
  const implied: Partial<Record<ErrorCode, string>> = {};
  if (route.access === 'token' || route.access === 'registered') {
    implied.auth_required = 'No access token, or an expired, malformed or revoked one: refresh once (`POST /v1/auth/refresh`) and retry.';
  }
  if (route.access === 'optional') implied.auth_required = 'A token was sent but is expired or malformed (sending none is fine).';
  if (route.access === 'registered') implied.registration_required = 'The caller is a guest: this needs a registered account (a refresh changes nothing).';
  if (!route.handler) {
    implied.not_implemented = 'Declared in the contract, not built yet.';
  } else {
    if (route.limits?.length) implied.rate_limited = 'Past the rate limit; wait `Retry-After` seconds when the header is there, else back off.';
    if (route.params || route.query || route.body || route.streamedBody || route.idempotent) {
      implied.validation_error = 'A parameter, header or body field failed validation; `details` names each one.';
    }
    if (route.body) implied.payload_too_large = 'The body is above the size limit.';
    for (const code of route.idempotent ? pairConflicts[route.idempotent] : []) {
      implied[code] = code === 'request_in_progress'
        ? 'The first request with this key is still waiting for the processor (at most about 1.5 minutes): retry later with the same key.'
        : 'The key came before with another body, or on the other endpoint of its pair.';
    }
  }
  implied.internal_error = 'Unexpected server error: the message is generic; quote the `X-Request-Id` header when reporting it.';
  implied.provider_unavailable = briefOutage;
  return implied;
}

function errorExample(code: ErrorCode): unknown {
  if (code === 'characters_required') return errors.charactersRequired().body;
  if (code === 'insufficient_credits') return errors.insufficientCredits({ amount: 40, balance: 25 }).body;
  const details = code === 'validation_error' ? [{ loc: ['body', 'device_id'], msg: 'must NOT have more than 255 characters', type: 'maxLength' }] : undefined;
  return { error: { code, message: errorCodes[code].message, ...(details ? { details } : {}) } };
}

const retryAfterHeader = {
  'Retry-After': { description: 'Seconds to wait, where the wait is known.', schema: { type: 'integer', minimum: 1 } },
};

function errorResponses(route: Route): Record<string, unknown> {
  const answers = { ...impliedErrors(route), ...route.errors };
  if (route.errors?.provider_unavailable) answers.provider_unavailable = `${route.errors.provider_unavailable} ${briefOutage}`;
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of Object.keys(answers) as ErrorCode[]) {
    const { status } = errorCodes[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[status] = {
      description: codes.map((code) => `\`${code}\`: ${answers[code]}`).join('\n\n'),
      ...(status === 429 || status === 503 ? { headers: retryAfterHeader } : {}),
      content: {
        'application/json': {
          schema: status === 422 ? validationErrorSchema : errorEnvelopeSchema,
          examples: Object.fromEntries(codes.map((code) => [code, { summary: code, value: errorExample(code) }])),
        },
      },
    };
  }
  return responses;
}

/**
 * The events of a `text/event-stream` answer, for people: each event name with the named schema of
 * its `data` (`x-sse-events` says the same for tools).
 */
function eventsDescription(events: Record<string, JsonSchema>): string {
  const lines = Object.entries(events).map(([name, schema]) =>
    `- \`${name}\`${name === 'message' ? ' (bare `data:` lines, no `event:` line)' : ''}: \`data\` is a ${schemaName(schema)}`);
  return `Each event's \`data\` is one line of JSON, by event name (\`x-sse-events\`):\n\n${lines.join('\n')}`;
}

function schemaName(schema: JsonSchema): string {
  if (typeof schema.title !== 'string') throw new Error('an SSE event schema needs a title: it is named in components/schemas');
  return `\`${schema.title}\` (\`#/components/schemas/${schema.title}\`)`;
}

function successResponses(route: Route): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, response] of Object.entries(route.responses ?? {})) {
    if (!response) continue;
    const media = {
      ...(response.schema ? { schema: response.schema } : {}),
      ...(response.example === undefined ? {} : { example: response.example }),
      ...(response.events ? { 'x-sse-events': response.events } : {}),
    };
    responses[status] = {
      description: response.events ? `${response.description}.\n\n${eventsDescription(response.events)}` : response.description,
      ...(Object.keys(media).length ? { content: { [response.contentType ?? 'application/json']: media } } : {}),
    };
  }
  return responses;
}

/** What a route not built yet will answer is not known here: the generator says so, in a 2xx. */
const unbuiltSuccess = { 200: { description: 'Not built yet: the successful answer is documented when the endpoint is.' } };

function operation(route: Route): Record<string, unknown> {
  const requestBody = route.body
    ? { required: true, content: { 'application/json': { schema: route.body, ...(route.bodyExample === undefined ? {} : { example: route.bodyExample }) } } }
    : route.streamedBody
      ? { required: true, content: { [route.streamedBody.contentType]: { schema: route.streamedBody.schema } } }
      : undefined;
  return {
    operationId: operationIdOf(route),
    summary: route.summary,
    tags: [tagOf(route).name],
    'x-access': route.access,
    // Public and optional routes use a token when one is sent (a guest upgrade, a catalog view).
    security: route.access === 'public' || route.access === 'optional' ? [{}, { bearer: [] }] : [{ bearer: [] }],
    parameters: [...parameters(pathSchema(route.path, route.params), 'path'), ...parameters(route.query, 'query'), ...(route.idempotent ? [idempotencyKeyParameter] : [])],
    ...(requestBody ? { requestBody } : {}),
    responses: { ...(route.handler ? successResponses(route) : unbuiltSuccess), ...errorResponses(route) },
  };
}

/**
 * Moves every schema with a `title` into `components/schemas` under that title and refers to it
 * with `$ref`; the route schemas themselves (which ajv compiles) are left as they are.
 */
function hoistNamedSchemas(paths: unknown): { paths: unknown; schemas: Record<string, unknown> } {
  const schemas: Record<string, unknown> = {};
  const seen = new Map<string, string>();
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit);
    if (!value || typeof value !== 'object') return value;
    const copy = Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, key === 'example' || key === 'examples' ? inner : visit(inner)]));
    const title = (value as { title?: unknown }).title;
    if (typeof title !== 'string' || !('type' in value || 'anyOf' in value)) return copy;
    const text = JSON.stringify(copy);
    if (seen.has(title) && seen.get(title) !== text) throw new Error(`two different schemas are titled ${title}`);
    seen.set(title, text);
    schemas[title] = copy;
    return { $ref: `#/components/schemas/${title}` };
  };
  return { paths: visit(paths), schemas };
}

export function openApiDocument(routes: Route[], serverUrl: string): Record<string, unknown> {
  const rawPaths: Record<string, Record<string, unknown>> = {};
  const usedTags = new Map<string, string | undefined>();
  for (const route of routes) {
    const tag = tagOf(route);
    if (!usedTags.get(tag.name)) usedTags.set(tag.name, tag.description || undefined);
    rawPaths[route.path] ??= {};
    rawPaths[route.path][route.method.toLowerCase()] = operation(route);
  }
  const { paths, schemas } = hoistNamedSchemas(rawPaths);
  const tagOrder = [...new Set(Object.values(tags).map((tag) => tag.name))];
  const rank = (name: string) => (tagOrder.includes(name) ? tagOrder.indexOf(name) : tagOrder.length);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Effects API',
      version: '1',
      summary: 'The REST API of the Effects mobile app: accounts, catalog, generations, payments.',
      description: apiGuide,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    tags: [...usedTags].sort(([a], [b]) => rank(a) - rank(b)).map(([name, description]) => ({ name, ...(description ? { description } : {}) })),
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'The `access_token` of a TokenResponse: `Authorization: Bearer <access_token>`.' },
      },
      schemas,
    },
    paths,
  };
}
