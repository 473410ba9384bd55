import type { ProviderKind } from '../../common/model-route';
import type { Config } from '../../config';
import type { ProviderAdapter } from './adapter';
import { FalAdapter } from './fal';
import { HttpProviderAdapter } from './http-client';
import { ReplicateAdapter } from './replicate';

/** What an adapter may be made from: the configuration, and the simulator's address when one runs. */
export interface AdapterContext {
  config: Config;
  /** PROVIDER_URL, or the in-process simulator's; null when none runs (no simulator account). */
  simulatorUrl: string | null;
}

/**
 * How each provider kind's adapter is made: one line per kind. A kind left null cannot be
 * configured with accounts yet (a worker refuses to start with them, `providerAdapters`).
 */
const adapterConstructors: Record<ProviderKind, ((context: AdapterContext) => ProviderAdapter) | null> = {
  simulator: ({ simulatorUrl }) => new HttpProviderAdapter({ baseUrl: simulatorUrl ?? missing('PROVIDER_URL') }),
  replicate: ({ config: { providerApis: apis } }) => new ReplicateAdapter({
    baseUrl: apis.replicate.baseUrl, callTimeoutMs: apis.callTimeoutMs, resultTimeoutMs: apis.resultTimeoutMs, lookupWindowS: apis.replicate.lookupWindowS,
  }),
  fal: ({ config: { providerApis: apis } }) => new FalAdapter({
    queueUrl: apis.fal.queueUrl, restUrl: apis.fal.restUrl, callTimeoutMs: apis.callTimeoutMs, resultTimeoutMs: apis.resultTimeoutMs,
  }),
};

function missing(what: string): never {
  throw new Error(`the simulator's adapter needs ${what}`);
}

/** The adapter of each provider kind this process runs tasks on. */
export class ProviderAdapters {
  constructor(private readonly byKind: Partial<Record<ProviderKind, ProviderAdapter>>) {}

  /** The kind's adapter; throws for a kind this process has none for (no account of it was configured). */
  of(kind: ProviderKind): ProviderAdapter {
    const adapter = this.byKind[kind];
    if (!adapter) throw new Error(`no adapter for provider kind ${kind} in this process`);
    return adapter;
  }
}

/** The adapters of `kinds` (those with accounts); refuses a kind whose adapter this build does not have. */
export function providerAdapters(kinds: Iterable<ProviderKind>, context: AdapterContext): ProviderAdapters {
  const byKind: Partial<Record<ProviderKind, ProviderAdapter>> = {};
  for (const kind of kinds) {
    const make = adapterConstructors[kind];
    if (!make) throw new Error(`accounts of provider kind ${kind} are configured, but this build has no adapter for ${kind}`);
    byKind[kind] = make(context);
  }
  return new ProviderAdapters(byKind);
}
