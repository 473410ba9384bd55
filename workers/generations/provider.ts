import { providerAdapters, type ProviderAdapters } from '../../clients/providers/registry';
import { configuredKinds } from '../../pool/model-routes';
import type { RunningPart, Services } from '../../services';

/**
 * The providers the worker talks to: one adapter per provider kind with accounts
 * (`clients/providers/registry.ts`). The simulator's kind speaks over HTTP to PROVIDER_URL (main.ts
 * points it at the in-process simulator when none is configured); started some other way without
 * one, the worker starts a simulator of its own. Several worker processes must share ONE simulator:
 * a task is polled by whichever worker comes first, so it must be known wherever it is polled.
 */
export async function startProvider(services: Services): Promise<RunningPart & { adapters: ProviderAdapters }> {
  const { config, log } = services;
  const kinds = configuredKinds(config.generations.providerAccounts);
  if (config.providerUrl || !kinds.has('simulator')) {
    return { adapters: providerAdapters(kinds, { config, simulatorUrl: config.providerUrl }), stop: async () => undefined };
  }
  const { startProviderSimulatorFromConfig } = await import('../../simulators/providers/from-config.js');
  const simulator = await startProviderSimulatorFromConfig(config, log);
  return { adapters: providerAdapters(kinds, { config, simulatorUrl: simulator.url }), stop: () => simulator.stop() };
}
