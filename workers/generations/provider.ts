import type { ProviderAdapter } from '../../clients/providers/adapter';
import { HttpProviderAdapter } from '../../clients/providers/http-client';
import type { RunningPart, Services } from '../../services';

/**
 * The provider the worker talks to, over HTTP: PROVIDER_URL (main.ts points it at the in-process
 * simulator when none is configured). Started some other way without one, the worker starts a
 * simulator of its own. Several worker processes must share ONE provider: a task is polled by
 * whichever worker comes first, so it must be known wherever it is polled.
 */
export async function startProvider(services: Services): Promise<RunningPart & { adapter: ProviderAdapter; url: string }> {
  const { config, log } = services;
  if (config.providerUrl) {
    return { adapter: new HttpProviderAdapter({ baseUrl: config.providerUrl }), url: config.providerUrl, stop: async () => undefined };
  }
  const { startProviderSimulatorFromConfig } = await import('../../simulators/providers/from-config.js');
  const simulator = await startProviderSimulatorFromConfig(config, log);
  return { adapter: new HttpProviderAdapter({ baseUrl: simulator.url }), url: simulator.url, stop: () => simulator.stop() };
}
