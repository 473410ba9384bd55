/**
 * How a task runs on one kind of provider: which model, how its `input` object is built from our
 * photos and prompt, and where its output holds the result. The catalog keeps one route per provider
 * kind for every effect (and studio category, moderation, sample preview); a generation keeps the
 * route it was started with, so a catalog change never changes a task already in line.
 */

/** The hosted-inference APIs an account of the pool speaks. `simulator`: our own protocol (the embedded default). */
export const providerKinds = ['simulator', 'replicate', 'fal'] as const;
export type ProviderKind = (typeof providerKinds)[number];

export function isProviderKind(value: unknown): value is ProviderKind {
  return typeof value === 'string' && (providerKinds as readonly string[]).includes(value);
}

export interface ModelRoute {
  /**
   * replicate: `owner/name` (an official model, run at its latest version) or a 64-character version
   * id; fal: an app id such as `fal-ai/flux/dev`; simulator: one of its model names (`image`, `video`...).
   */
  model: string;
  /**
   * The provider's `input` object. String values may hold placeholders (`inputPlaceholders`): a value
   * that is exactly one placeholder takes its value (a string, or a list for `{{photos}}`), a
   * placeholder inside a longer string is replaced by its text. Everything else is sent as written
   * (fixed parameters: a strength, a seed, a size). Absent: the simulator's own shape.
   */
  input?: Record<string, unknown>;
  /**
   * Where the result's link is in the task's output: a path of fields and list indexes, such as
   * `images[0].url` (fal), `[0]` or `` (the output itself: Replicate's string or list of links, the
   * first taken). Absent: the output itself. A text task's answer may be there inline instead of a
   * link: a string, or Replicate's list of tokens (`resultTextOf`).
   */
  output?: string;
}

/** The photos of a task in order, each with its 0-based person, as links the provider can read. */
export interface RoutePhoto {
  url: string;
  person: number;
}

/**
 * `{{prompt}}` the task's prompt; `{{photos}}` every photo, in order; `{{photo}}` the first one;
 * `{{photo.N}}` the N-th (1-based); `{{person.P.photo}}`, `{{person.P.photo.N}}`, `{{person.P.photos}}`
 * the photos of the P-th person (1-based).
 */
export const inputPlaceholders = ['prompt', 'photos', 'photo', 'photo.N', 'person.P.photo', 'person.P.photo.N', 'person.P.photos'];

const placeholder = /\{\{\s*([a-z0-9.]+)\s*\}\}/g;
const wholePlaceholder = /^\{\{\s*([a-z0-9.]+)\s*\}\}$/;

/** A placeholder's value, `undefined` when the task has no such photo, or null when the name is unknown. */
function valueOf(name: string, photos: RoutePhoto[], prompt: string): string | string[] | undefined | null {
  const urls = (list: RoutePhoto[]) => list.map((photo) => photo.url);
  const nth = (list: RoutePhoto[], n: string | undefined) => urls(list)[n === undefined ? 0 : Number(n) - 1];
  if (name === 'prompt') return prompt;
  if (name === 'photos') return urls(photos);
  let match = /^photo(?:\.([1-9]\d*))?$/.exec(name);
  if (match) return nth(photos, match[1]);
  match = /^person\.([1-9]\d*)\.(photos|photo(?:\.([1-9]\d*))?)$/.exec(name);
  if (match) {
    const own = photos.filter((photo) => photo.person === Number(match![1]) - 1);
    return match[2] === 'photos' ? urls(own) : nth(own, match[3]);
  }
  return null;
}

/** Every placeholder name `template` holds, once each, in the order they first appear. */
export function placeholdersOf(template: Record<string, unknown>): string[] {
  const names = new Set<string>();
  const visit = (value: unknown) => {
    if (typeof value === 'string') {
      for (const [, name] of value.matchAll(placeholder)) names.add(name);
    } else if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === 'object') Object.values(value).forEach(visit);
  };
  visit(template);
  return [...names];
}

/** The placeholder names of `template` that mean nothing (a catalog import refuses them). */
export function unknownPlaceholders(template: Record<string, unknown>): string[] {
  return placeholdersOf(template).filter((name) => valueOf(name, [], '') === null);
}

/**
 * The provider's `input` for a task: the route's template with its placeholders filled. A field
 * whose whole value names a photo the task does not have (an optional person left out) is left out;
 * a list keeps the photos there are.
 */
export function buildInput(template: Record<string, unknown>, photos: RoutePhoto[], prompt: string): Record<string, unknown> {
  const fill = (value: unknown): unknown => {
    if (typeof value === 'string') {
      const whole = wholePlaceholder.exec(value);
      if (whole) return valueOf(whole[1], photos, prompt) ?? undefined;
      return value.replace(placeholder, (text, name: string) => {
        const filled = valueOf(name, photos, prompt);
        return typeof filled === 'string' ? filled : Array.isArray(filled) ? filled.join(',') : filled === null ? text : '';
      });
    }
    if (Array.isArray(value)) return value.map(fill).filter((item) => item !== undefined);
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, fill(item)]).filter(([, item]) => item !== undefined));
    }
    return value;
  };
  return fill(template) as Record<string, unknown>;
}

/** `images[0].url` as steps: `['images', 0, 'url']`; `` is no step at all; null when it is not such a path. */
export function outputPath(selector: string): (string | number)[] | null {
  if (selector === '') return [];
  if (!/^([A-Za-z_]\w*|\[\d+\])(\.[A-Za-z_]\w*|\[\d+\])*$/.test(selector)) return null;
  return [...selector.matchAll(/([A-Za-z_]\w*)|\[(\d+)\]/g)].map((match) => match[1] ?? Number(match[2]));
}

/** What the route's `output` path reaches in a task's output; undefined when the path leads nowhere. */
function reached(output: unknown, selector: string | undefined): unknown {
  let value: unknown = output;
  for (const step of outputPath(selector ?? '') ?? []) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[step];
  }
  return value;
}

const link = /^(https?:|data:)/;

/**
 * The result's link in a task's output, by the route's `output` path; null when it is not there.
 * What the path reaches may be a link, a list of links (the first is taken) or a file object with a
 * `url` (fal's `{url, content_type}`).
 */
export function resultUrlOf(output: unknown, selector: string | undefined): string | null {
  let value = reached(output, selector);
  if (Array.isArray(value)) value = value[0];
  if (value && typeof value === 'object' && typeof (value as { url?: unknown }).url === 'string') value = (value as { url: string }).url;
  return typeof value === 'string' && link.test(value) ? value : null;
}

/**
 * A text model's answer given inline in the output, by the route's `output` path: a string that is
 * no link (fal's vision router answers `{output: text}`), or a list of such strings joined (Replicate's
 * language models stream tokens, and the final output is their list). Null otherwise: a link is read
 * by `resultUrlOf`. Only a task that expects text takes it; an image or video is a link or nothing.
 */
export function resultTextOf(output: unknown, selector: string | undefined): string | null {
  const value = reached(output, selector);
  const parts = Array.isArray(value) ? value : [value];
  if (parts.length === 0 || !parts.every((part) => typeof part === 'string' && !link.test(part))) return null;
  return parts.join('');
}

/** A finished task's output as a poll outcome's result: its link, or else the text it holds inline. */
export function taskResultOf(output: unknown, selector: string | undefined): { resultUrl: string | null; text?: string } {
  const resultUrl = resultUrlOf(output, selector);
  const text = resultUrl === null ? resultTextOf(output, selector) : null;
  return text === null ? { resultUrl } : { resultUrl, text };
}
