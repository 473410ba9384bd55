import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { errors, type ErrorDetail } from './errors';

/**
 * Request validation with ajv. The same schema objects are published in `/v1/openapi.json`, so the
 * machine-readable contract cannot drift from what is enforced. Unknown fields are allowed and ignored.
 */
export type JsonSchema = Record<string, unknown>;
export type Location = 'body' | 'query' | 'path' | 'header';

function createAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes, strict: false });
  addFormats(ajv);
  return ajv;
}

// Query strings and path segments arrive as text; bodies must already carry the right JSON types.
const bodyAjv = createAjv(false);
const textAjv = createAjv('array');
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

function validatorFor(schema: JsonSchema, location: Location): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = (location === 'body' ? bodyAjv : textAjv).compile(schema);
    compiled.set(schema, validate);
  }
  return validate;
}

function detailOf(error: ErrorObject, location: Location): ErrorDetail {
  const loc: (string | number)[] = [location];
  for (const part of error.instancePath.split('/').slice(1)) {
    const name = part.replace(/~1/g, '/').replace(/~0/g, '~');
    loc.push(/^\d+$/.test(name) ? Number(name) : name);
  }
  if (error.keyword === 'required') loc.push((error.params as { missingProperty: string }).missingProperty);
  // ajv's messages describe the rule ("must NOT have more than 128 characters"), never the value.
  return { loc, msg: error.message ?? 'is invalid', type: error.keyword };
}

/** Returns the (defaulted, coerced) data, or throws `422 validation_error` naming every bad field. */
export function validate<T>(schema: JsonSchema, data: unknown, location: Location): T {
  const check = validatorFor(schema, location);
  if (check(data)) return data as T;
  throw errors.validation((check.errors ?? []).map((error) => detailOf(error, location)));
}

/** Small schema builders for the common shapes, so route schemas read like the contract's tables. */
export const schema = {
  object: (properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema => ({
    type: 'object',
    properties,
    required,
  }),
  /**
   * An object the service sends: every property is always there (null where its schema allows)
   * unless named in `optional`, so generated clients need no presence checks. A `title` names it
   * in `/v1/openapi.json` (`components/schemas`).
   */
  response: (properties: Record<string, JsonSchema>, options: { title?: string; optional?: string[] } = {}): JsonSchema => ({
    ...(options.title ? { title: options.title } : {}),
    type: 'object',
    properties,
    required: Object.keys(properties).filter((name) => !options.optional?.includes(name)),
  }),
  string: (options: { minLength?: number; maxLength?: number; pattern?: string; format?: string; enum?: string[] } = {}): JsonSchema => ({
    type: 'string',
    ...options,
  }),
  integer: (options: { minimum?: number; maximum?: number; default?: number } = {}): JsonSchema => ({ type: 'integer', ...options }),
  boolean: (): JsonSchema => ({ type: 'boolean' }),
  array: (items: JsonSchema, options: { maxItems?: number; minItems?: number } = {}): JsonSchema => ({ type: 'array', items, ...options }),
  uuid: (): JsonSchema => ({ type: 'string', format: 'uuid' }),
  nullable: (inner: JsonSchema): JsonSchema => ({ anyOf: [inner, { type: 'null' }] }),
};

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are UUIDs; anything else in their place names nothing (a 404, or a slug), never a 422. */
export function isUuid(text: string): boolean {
  return uuidShape.test(text);
}
