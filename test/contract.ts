import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { openApiDocument } from '../api/openapi';
import { allRoutes } from '../api/routes';

/**
 * Holds every answer the tests receive to the truth `/v1/openapi.json` tells: its status must be one
 * the operation documents, and its JSON body must match the documented schema, where every object
 * is closed (a field the document does not name fails) and `required` is enforced. Every test that
 * talks to the API through `test/client.ts` checks this, so a `required` field the service leaves
 * out, an undocumented field or an undocumented status fails the test that saw it.
 */

interface Operation {
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };

let contract: { document: Document; templates: { path: string; pattern: RegExp; literals: number }[]; ajv: Ajv2020 } | null = null;
const validators = new Map<string, ValidateFunction>();

/** A copy where every object schema is closed and every `$ref` points into the `contract` schema. */
function strict(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(strict);
  if (!schema || typeof schema !== 'object') return schema;
  const copy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'example' || key === 'examples') continue;
    copy[key] = key === '$ref' ? String(value).replace('#/components/schemas/', 'contract#/$defs/') : strict(value);
  }
  if (copy.properties && copy.additionalProperties === undefined) copy.additionalProperties = false;
  return copy;
}

function loadContract() {
  if (contract) return contract;
  const routes = allRoutes('http://127.0.0.1').filter((route) => route.path !== '/v1/openapi.json');
  const document = openApiDocument(routes, 'http://127.0.0.1') as unknown as Document;
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: 'contract', $defs: strict(document.components.schemas) as object });
  const templates = Object.keys(document.paths).map((path) => ({
    path,
    pattern: new RegExp(`^${path.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`),
    literals: path.split('/').filter((segment) => !segment.startsWith('{')).length,
  }));
  contract = { document, templates, ajv };
  return contract;
}

/** The documented path a request path is an instance of (a literal segment beats a parameter). */
function templateOf(path: string): string | null {
  const matches = loadContract().templates.filter((template) => template.pattern.test(path));
  matches.sort((a, b) => b.literals - a.literals);
  return matches[0]?.path ?? null;
}

export class ContractViolation extends Error {}

/** Throws `ContractViolation` when the answer is not what the document says this operation answers. */
export function checkAgainstContract(method: string, url: string, status: number, contentType: string, body: unknown): void {
  const path = url.split('?')[0];
  if (!path.startsWith('/v1/')) return;
  const template = templateOf(path);
  const operation = template ? loadContract().document.paths[template][method.toLowerCase()] : undefined;
  if (!operation) return;
  const endpoint = `${method} ${template}`;
  const response = operation.responses[String(status)];
  if (!response) {
    throw new ContractViolation(`${endpoint} answered ${status}, which /v1/openapi.json does not document: declare it on the route (\`errors\` or \`responses\`)`);
  }
  const mediaType = contentType.split(';')[0].trim();
  const schema = response.content?.[mediaType]?.schema;
  if (!schema || mediaType !== 'application/json') return;
  const key = `${endpoint} ${status}`;
  let validate = validators.get(key);
  if (!validate) {
    validate = loadContract().ajv.compile(strict(schema) as object);
    validators.set(key, validate);
  }
  if (!validate(body)) {
    const problems = (validate.errors ?? []).map((error) => `${error.instancePath || '(body)'} ${error.message}${error.params && 'additionalProperty' in error.params ? `: ${String(error.params.additionalProperty)}` : ''}`);
    throw new ContractViolation(`${endpoint} answered ${status} with a body /v1/openapi.json does not describe: ${problems.join('; ')}`);
  }
}
