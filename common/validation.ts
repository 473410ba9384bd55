import Ajv, { _, type ErrorObject, type KeywordCxt, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { quantity } from './plural';

/**
 * JSON Schema validation, one setup for everything that checks outside input: the API's requests
 * (`api/http/validation.ts` wraps it in the error envelope, and the same schema objects are published
 * in `/v1/openapi.json`) and the operator's catalog import (`services/catalog/import.ts`).
 *
 * Two rules hold for every schema without being written in it, because Postgres would otherwise
 * refuse the value: no string may contain U+0000 (Postgres text cannot hold it), and a `uuid` is
 * only the canonical 8-4-4-4-12 hex form (ajv-formats also takes `urn:uuid:…`, which Postgres does not).
 */
export type JsonSchema = Record<string, unknown>;

/**
 * `typed`: the data already carries JSON types (a body, a document); `text`: values arrive as text
 * and are coerced (query strings, path segments).
 */
export type InputKind = 'typed' | 'text';

/** One thing wrong with the data: where (`path` into the data), which rule, and what the rule says (never the value). */
export interface Problem {
  path: (string | number)[];
  rule: string;
  message: string;
}

const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are UUIDs; anything else in their place names nothing (a 404, or a slug), never a 422. */
export function isUuid(text: string): boolean {
  return uuidShape.test(text);
}

/** The keyword added to every string of a compiled schema (not to the published one). */
export const noNulCharacter = 'noNulCharacter';

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

// Created at the first check, not when the module loads: every role process loads this module.
const ajvs: Partial<Record<InputKind, Ajv>> = {};
const compiled: Record<InputKind, WeakMap<JsonSchema, ValidateFunction>> = { typed: new WeakMap(), text: new WeakMap() };

function validatorFor(schema: JsonSchema, kind: InputKind): ValidateFunction {
  let validate = compiled[kind].get(schema);
  if (!validate) {
    ajvs[kind] ??= createAjv(kind === 'text' ? 'array' : false);
    validate = ajvs[kind].compile(withoutNul(schema));
    compiled[kind].set(schema, validate);
  }
  return validate;
}

function problemOf(error: ErrorObject): Problem {
  const path: (string | number)[] = error.instancePath.split('/').slice(1).map((part) => {
    const name = part.replace(/~1/g, '/').replace(/~0/g, '~');
    return /^\d+$/.test(name) ? Number(name) : name;
  });
  if (error.keyword === 'required') path.push((error.params as { missingProperty: string }).missingProperty);
  if (error.keyword === 'additionalProperties') {
    path.push((error.params as { additionalProperty: string }).additionalProperty);
    return { path, rule: error.keyword, message: 'is not a known field' };
  }
  // ajv's messages describe the rule ("must NOT have more than 128 characters"), never the value;
  // those of a count are said again with the noun's right form ("fewer than 1 item", not "1 items").
  const counted = countedRules[error.keyword];
  if (counted) {
    const [comparison, singular, plural] = counted;
    return { path, rule: error.keyword, message: `must NOT have ${comparison} than ${quantity((error.params as { limit: number }).limit, singular, plural)}` };
  }
  return { path, rule: error.keyword, message: error.message ?? 'is invalid' };
}

const countedRules: Record<string, [comparison: string, singular: string, plural?: string]> = {
  minLength: ['fewer', 'character'],
  maxLength: ['more', 'character'],
  minItems: ['fewer', 'item'],
  maxItems: ['more', 'item'],
  minProperties: ['fewer', 'property', 'properties'],
  maxProperties: ['more', 'property', 'properties'],
};

/**
 * Checks `data` against `schema` (defaults filled in, text coerced for `text`); the problems found,
 * none when it is valid.
 */
export function problemsOf(schema: JsonSchema, data: unknown, kind: InputKind): Problem[] {
  const check = validatorFor(schema, kind);
  return check(data) ? [] : (check.errors ?? []).map(problemOf);
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
