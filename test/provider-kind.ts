import { isProviderKind, type ModelRoute, type ProviderKind } from '../common/model-route';
import type { ModelRoutes } from '../db/catalog/model';
import { accountsVariable, simulatedApiEnv, simulatedRoute } from '../simulators/providers/simulated-kinds';

/**
 * The provider kind the tests of the provider path run over: `TEST_PROVIDER_KIND` (simulator, the
 * default, replicate or fal). Under replicate or fal the fixtures' accounts, effects, studio
 * categories and marketplace routes are of that kind, pointed at the simulator's matching protocol
 * (`simulators/providers/`), so the whole path goes through that kind's adapter and webhooks.
 * `npm test` runs those files once more per kind (`scripts/test-kinds.mjs`).
 */
export const testKind: ProviderKind = kindOfEnvironment(process.env.TEST_PROVIDER_KIND);

function kindOfEnvironment(value: string | undefined): ProviderKind {
  if (value === undefined || value === '') return 'simulator';
  if (!isProviderKind(value)) throw new Error(`TEST_PROVIDER_KIND must be simulator, replicate or fal, not ${value}`);
  return value;
}

/** A describe title naming the kind, so a failure says which protocol it ran over. */
export function overKind(title: string): string {
  return `${title} [${testKind}]`;
}

/** An account's key as its kind writes it: fal's keys are `key_id:key_secret`. */
export function kindKey(name: string): string {
  return testKind === 'fal' ? `${name}:secret` : name;
}

/** The simulator's account caps (`startProviderSimulator`'s `accounts`) with each key as the kind writes it. */
export function kindKeys(caps: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(caps).map(([name, cap]) => [kindKey(name), cap]));
}

/** The configuration of accounts `name: slots` of the kind, in its own variable. */
export function kindAccounts(slots: Record<string, number>): Record<string, string> {
  return { [accountsVariable[testKind]]: Object.entries(slots).map(([name, count]) => `${kindKey(name)}:${count}`).join(',') };
}

/** Whether a configuration names accounts of any kind itself. */
export function namesAccounts(env: Record<string, string>): boolean {
  return Object.values(accountsVariable).some((variable) => variable in env);
}

/** The route of the kind that runs the simulator's model `model` through the kind's protocol (`simulatedRoute`). */
export function kindRoute(model: string): ModelRoute {
  return simulatedRoute(testKind, model);
}

/** `runs` of a catalog row on the simulator's model `model`: null on the simulator (its `model` column says it). */
export function kindRuns(model: string): ModelRoutes | null {
  return testKind === 'simulator' ? null : { [testKind]: kindRoute(model) };
}

/** Where the adapters and webhook checks of Replicate and fal find a simulator (its protocol fronts) at `base`. */
export function simulatorApis(base: string): Record<string, string> {
  return { ...simulatedApiEnv('replicate', base), ...simulatedApiEnv('fal', base) };
}

/** Whether a request to a simulator submits a task in the kind's protocol. */
export function isSubmission(request: { method?: string; url?: string }): boolean {
  const path = new URL(request.url ?? '/', 'http://simulator').pathname;
  const submission = { simulator: /^\/v1\/tasks$/, replicate: /^\/replicate\/v1\/models\/[^/]+\/[^/]+\/predictions$/, fal: /^\/fal\/queue\/[^/]+\/[^/]+$/ }[testKind];
  return request.method === 'POST' && submission.test(path);
}

/** The task's id in a simulator's answer to a submission in the kind's protocol. */
export function submittedTaskId(answer: string): string {
  const body = JSON.parse(answer) as { id?: string; request_id?: string };
  return (testKind === 'fal' ? body.request_id : body.id) as string;
}

/**
 * What every test configuration starts from under the kind: two accounts of it, the marketplace's
 * routes on it, and its APIs on a loopback port nothing listens on, so a test that names no simulator
 * never reaches the real provider.
 */
export function kindConfig(): Record<string, string> {
  if (testKind === 'simulator') return {};
  return {
    ...kindAccounts({ 'acct-one': 2, 'acct-two': 2 }),
    MODERATION_RUNS: JSON.stringify(kindRuns('moderation')),
    USER_EFFECT_IMAGE_RUNS: JSON.stringify(kindRuns('image')),
    USER_EFFECT_VIDEO_RUNS: JSON.stringify(kindRuns('video')),
    ...simulatorApis('http://127.0.0.1:9'),
  };
}

/** Where the simulator's front of the kind keeps the photos staged with it (each link starts so). */
export function stagedFilesUrl(simulatorUrl: string): string {
  return { simulator: `${simulatorUrl}/v1/files/`, replicate: `${simulatorUrl}/replicate/v1/files/`, fal: `${simulatorUrl}/fal/files/` }[testKind];
}

/**
 * The error_code of a submission whose photo the provider cannot read: Replicate answers a 422 that
 * names no cause, the same as a route its model's input refuses.
 */
export function unreadablePhotoCode(): string {
  return testKind === 'replicate' ? 'invalid_input' : 'bad_input_image';
}
