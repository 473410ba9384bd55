import { noNulCharacter, problemsOf, schema, type JsonSchema } from '../../common/validation';
import { errors } from './errors';

/**
 * A request's parts checked against its route's schemas (`common/validation.ts`), answered in the
 * error envelope. Unknown fields are allowed and ignored.
 */
export type Location = 'body' | 'query' | 'path' | 'header';

/**
 * Returns the (defaulted, coerced) data, or throws `422 validation_error` naming the bad fields.
 * A path parameter with U+0000 in it cannot name anything: `404`.
 */
export function validate<T>(schema: JsonSchema, data: unknown, location: Location): T {
  const problems = problemsOf(schema, data, location === 'body' ? 'typed' : 'text');
  if (!problems.length) return data as T;
  if (location === 'path' && problems.some((problem) => problem.rule === noNulCharacter)) throw errors.notFound();
  throw errors.validation(problems.map((problem) => ({ loc: [location, ...problem.path], msg: problem.message, type: problem.rule })));
}

/** The schema of a route's path: its own, or every `{name}` of the path as a required string. */
export function pathSchema(path: string, declared: JsonSchema | undefined): JsonSchema {
  if (declared) return declared;
  const names = [...path.matchAll(/\{([a-z_]+)\}/g)].map(([, name]) => name);
  return schema.object(Object.fromEntries(names.map((name) => [name, schema.string()])), names);
}
