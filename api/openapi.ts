import { errors } from './http/errors';
import { idempotencyKeyParameter } from './http/idempotency';
import type { Route } from './http/route';
import { pathSchema, type JsonSchema } from './http/validation';

const errorEnvelope: JsonSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        details: {
          type: 'array',
          items: {
            type: 'object',
            properties: { loc: { type: 'array', items: { type: ['string', 'integer'] } }, msg: { type: 'string' }, type: { type: 'string' } },
          },
        },
      },
      required: ['code', 'message'],
    },
  },
  required: ['error'],
};

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

/**
 * The machine-readable contract (OpenAPI 3.1), generated from the very route table and schemas
 * that validate requests.
 */
export function openApiDocument(routes: Route[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const responses: Record<string, unknown> = {};
    for (const [status, response] of Object.entries(route.responses ?? {})) {
      responses[status] = {
        description: response.description,
        ...(response.schema ? { content: { [response.contentType ?? 'application/json']: { schema: response.schema } } } : {}),
      };
    }
    if (!route.handler) responses['501'] = { description: errors.notImplemented().message };
    responses.default = { description: 'Error envelope', content: { 'application/json': { schema: errorEnvelope } } };
    paths[route.path] ??= {};
    paths[route.path][route.method.toLowerCase()] = {
      summary: route.summary,
      'x-access': route.access,
      ...(route.access === 'public' ? {} : { security: route.access === 'optional' ? [{}, { bearer: [] }] : [{ bearer: [] }] }),
      parameters: [...parameters(pathSchema(route.path, route.params), 'path'), ...parameters(route.query, 'query'), ...(route.idempotent ? [idempotencyKeyParameter] : [])],
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: route.body } } } } : {}),
      ...(route.streamedBody ? { requestBody: { required: true, content: { [route.streamedBody.contentType]: { schema: route.streamedBody.schema } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Effects API', version: '1' },
    servers: [{ url: serverUrl }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    paths,
  };
}
