import type { ModelRoute, ProviderKind } from '../../common/model-route';
import { modelBehaviour } from './models';

/**
 * The simulator standing in for a provider of each kind, for the load test, the fault suite and the
 * benchmarks: the service's accounts of that kind, where its adapter finds the simulator's front,
 * and the route of that kind that runs one of the simulator's models.
 */

/** The variable that lists a kind's accounts (`config.ts`). */
export const accountsVariable: Record<ProviderKind, string> = { simulator: 'PROVIDER_ACCOUNTS', replicate: 'REPLICATE_ACCOUNTS', fal: 'FAL_ACCOUNTS' };

/**
 * Accounts named `names` with `slots` each, as accounts of `kind`: the variable that configures
 * them, and the keys the simulator is told (a fal key is `key_id:key_secret`).
 */
export function simulatedAccounts(kind: ProviderKind, names: string[], slots: number): { env: Record<string, string>; keys: Record<string, number> } {
  const keys = Object.fromEntries(names.map((name) => [kind === 'fal' ? `${name}:secret` : name, slots]));
  return { env: { [accountsVariable[kind]]: Object.entries(keys).map(([key, cap]) => `${key}:${cap}`).join(',') }, keys };
}

/** Where a kind's adapter reaches the simulator at `simulatorUrl` (its own protocol's root, or the front of that kind). */
export function simulatedApiEnv(kind: ProviderKind, simulatorUrl: string): Record<string, string> {
  const base = simulatorUrl.replace(/\/+$/, '');
  switch (kind) {
    case 'simulator':
      return { PROVIDER_URL: base };
    case 'replicate':
      return { REPLICATE_API_URL: `${base}/replicate/v1` };
    case 'fal':
      return { FAL_QUEUE_URL: `${base}/fal/queue`, FAL_REST_URL: `${base}/fal/rest`, FAL_JWKS_URL: `${base}/fal/rest/.well-known/jwks.json` };
  }
}

/**
 * The route of `kind` that runs the simulator's `model`, as an effect of a real provider names its
 * model: `sim/<model>` on Replicate and fal (their fronts run the model named by the last part),
 * every photo as a list and the prompt in the input, the result where that kind's output holds it
 * (Replicate: the output itself; fal: its image, its video, or a language model's `output` text).
 */
export function simulatedRoute(kind: ProviderKind, model: string): ModelRoute {
  if (kind === 'simulator') return { model };
  const input = { images: '{{photos}}', prompt: '{{prompt}}' };
  if (kind === 'replicate') return { model: `sim/${model}`, input, output: '' };
  const behaviour = modelBehaviour(model);
  const rendered = behaviour?.kind === 'renders' ? behaviour : null;
  const output = rendered?.answersText ? 'output' : rendered?.contentType.startsWith('video/') ? 'video.url' : 'images[0].url';
  return { model: `sim/${model}`, input, output };
}
