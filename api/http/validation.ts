import Ajv, { _, type ErrorObject, type KeywordCxt, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { errors, type ErrorDetail } from './errors';

/**
 * Request validation with ajv. The same schema objects are published in `/v1/openapi.json`, so the
 * machine-readable contract cannot drift from what is enforced. Unknown fields are allowed and ignored.
 *
 * Two rules hold for every route without being written in its schema, because Postgres would
 * otherwise refuse the value with a 500: no text the route reads may contain U+0000 (Postgres text
 * cannot hold it), and a `uuid` is only the canonical 8-4-4-4-12 hex form (ajv-formats also takes
 * `urn:uuid:…`, which Postgres does not).
 */
export type JsonSchema = Record<string, unknown>;
export type Location = 'body' | 'query' | 'path' | 'header';

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are UUIDs; anything else in their place names nothing (a 404, or a slug), never a 422. */
export function isUuid(text: string): boolean {
  return uuidShape.test(text);
}

/** The keyword added to every string of a compiled schema (not to the published one). */
const noNulCharacter = 'noNulCharacter';

function createAjv(coerceTypes: boolean | 'array'): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, coerceTypes, strict: false });
  addFormats(ajv);
  ajv.addFormat('uuid', uuidShape);
  ajv.addKeyword({
    keyword: noNulCharacter,
    type: 'string',
    schemaType: 'boolean',
    error: { message: 'must not contain the NUL character (U+0000)' },
    code: (cxt: KeywordCxt) => cxt.fail(_`${cxt.data}.includes("\u0000")`),
  });
  return ajv;
}

const subschemaMaps = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const subschemaLists = ['anyOf', 'allOf', 'oneOf', 'prefixItems'];
const subschemas = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties'];

/** A copy of `schema` whose every string type also refuses U+0000. */
function withoutNul(schema: JsonSchema): JsonSchema {
  const copy: JsonSchema = { ...schema };
  const isSchema = (value: unknown): value is JsonSchema => Boolean(value) && typeof value === 'object' && !Array.isArray(value);
  for (const name of subschemaMaps) {
    if (isSchema(schema[name])) copy[name] = Object.fromEntries(Object.entries(schema[name]).map(([key, value]) => [key, isSchema(value) ? withoutNul(value) : value]));
  }
  for (const name of subschemaLists) {
    if (Array.isArray(schema[name])) copy[name] = schema[name].map((value: unknown) => (isSchema(value) ? withoutNul(value) : value));
  }
  for (const name of subschemas) {
    if (isSchema(schema[name])) copy[name] = withoutNul(schema[name]);
  }
  const type = schema.type;
  if (type === 'string' || (Array.isArray(type) && type.includes('string'))) copy[noNulCharacter] = true;
  return copy;
}

// Query strings and path segments arrive as text; bodies must already carry the right JSON types.
const bodyAjv = createAjv(false);
const textAjv = createAjv('array');
const compiled = new WeakMap<JsonSchema, ValidateFunction>();

function validatorFor(schema: JsonSchema, location: Location): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    validate = (location === 'body' ? bodyAjv : textAjv).compile(withoutNul(schema));
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

/**
 * Returns the (defaulted, coerced) data, or throws `422 validation_error` naming the bad fields.
 * A path parameter with U+0000 in it cannot name anything: `404`.
 */
export function validate<T>(schema: JsonSchema, data: unknown, location: Location): T {
  const check = validatorFor(schema, location);
  if (check(data)) return data as T;
  const problems = check.errors ?? [];
  if (location === 'path' && problems.some((error) => error.keyword === noNulCharacter)) throw errors.notFound();
  throw errors.validation(problems.map((error) => detailOf(error, location)));
}

/** The schema of a route's path: its own, or every `{name}` of the path as a required string. */
export function pathSchema(path: string, declared: JsonSchema | undefined): JsonSchema {
  if (declared) return declared;
  const names = [...path.matchAll(/\{([a-z_]+)\}/g)].map(([, name]) => name);
  return schema.object(Object.fromEntries(names.map((name) => [name, schema.string()])), names);
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
