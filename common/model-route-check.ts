import { inputPlaceholders, isProviderKind, outputPath, placeholdersOf, providerKinds, unknownPlaceholders, type ModelRoute, type ProviderKind } from './model-route';
import { problemsOf, type JsonSchema, type Problem } from './validation';

/**
 * The checks of a `runs` value (one route per provider kind), the same wherever routes are written:
 * the catalog import (effects, studio categories) and the configuration (the marketplace's routes).
 * A route that passes is sent as written, so a mistake shows here, as a row error or a refused
 * start, not as a failed task at the provider.
 */

/** What the task a route runs always has. */
export interface RouteTask {
  /** The people its photos belong to: `{{person.P...}}` beyond them names nobody. */
  persons: number;
  /** It always has a photo: a real provider's input must place one somewhere. */
  photos: boolean;
}

const routeSchema: JsonSchema = {
  type: 'object',
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 200 },
    input: { type: 'object' },
    output: { type: 'string', maxLength: 200 },
  },
  required: ['model'],
  additionalProperties: false,
};

/** A model id each kind can be asked for; a segment never starts with a dot, so no id climbs out of the provider's path. */
const modelIds: Record<ProviderKind, { shape: RegExp; rule: string }> = {
  simulator: { shape: /^[a-z0-9_.-]{1,64}$/, rule: "must be one of the simulator's models (lowercase letters, digits, _ . -)" },
  replicate: { shape: /^(?:[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*|[0-9a-f]{64})$/, rule: 'must be owner/name (an official model) or a 64-character version id' },
  fal: { shape: /^[A-Za-z0-9][\w.-]*(?:\/[A-Za-z0-9][\w.-]*)+$/, rule: 'must be an app id such as fal-ai/flux-pro/kontext' },
};

const kindList = providerKinds.join(', ');

/** The problems of a `runs` value, their paths inside it (`replicate.model`); none when every route is usable. */
export function modelRoutesProblems(value: unknown, task: RouteTask): Problem[] {
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return [{ path: [], rule: 'type', message: `must be an object with a route per provider kind (${kindList})` }];
  }
  const routes = value as Record<string, unknown>;
  const problems: Problem[] = Object.keys(routes).filter((kind) => !isProviderKind(kind))
    .map((kind) => ({ path: [kind], rule: 'providerKind', message: `is not a provider kind (${kindList})` }));
  if (!Object.keys(routes).some(isProviderKind)) problems.push({ path: [], rule: 'minProperties', message: `must name at least one provider kind (${kindList})` });
  for (const kind of providerKinds) {
    if (routes[kind] === undefined) continue;
    for (const problem of routeProblems(kind, routes[kind], task)) problems.push({ ...problem, path: [kind, ...problem.path] });
  }
  return problems;
}

function routeProblems(kind: ProviderKind, value: unknown, task: RouteTask): Problem[] {
  const shape = problemsOf(routeSchema, value, 'typed');
  if (shape.length) return shape;
  const { model, input, output } = value as ModelRoute;
  const problems: Problem[] = [];
  const problem = (field: string, rule: string, message: string) => problems.push({ path: [field], rule, message });
  if (!modelIds[kind].shape.test(model)) problem('model', 'modelId', modelIds[kind].rule);
  if (input === undefined && kind !== 'simulator') problem('input', 'required', `is required: the model's input object, with placeholders where the photos and the prompt go`);
  if (input !== undefined) {
    const unknown = unknownPlaceholders(input);
    if (unknown.length) {
      problem('input', 'placeholder', `names ${unknown.map((name) => `{{${name}}}`).join(', ')}, which mean nothing (known: ${inputPlaceholders.map((name) => `{{${name}}}`).join(', ')})`);
    }
    const known = placeholdersOf(input).filter((name) => !unknown.includes(name));
    const person = Math.max(0, ...known.map((name) => Number(/^person\.(\d+)\./.exec(name)?.[1] ?? 0)));
    if (person > task.persons) problem('input', 'person', `names person ${person}, but the task has ${task.persons}`);
    if (task.photos && kind !== 'simulator' && !known.some((name) => name !== 'prompt')) {
      problem('input', 'photo', 'places no photo: put {{photo}}, {{photos}} or {{person.P.photo}} where the model takes its image');
    }
  }
  if (output !== undefined && outputPath(output) === null) {
    problem('output', 'outputPath', 'must be a path of fields and list indexes such as images[0].url or [0], or empty for the output itself');
  }
  return problems;
}
