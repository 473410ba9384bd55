import { type Config } from '../../config';
import type { Logger } from '../../common/logger';
import { startProviderSimulator, type ProviderSimulator } from './provider-simulator';

type SimulatorSettings = Pick<Config, 'simProviderPort' | 'simProviderLatencyMs' | 'simProviderFailureRate' | 'simProviderConcurrency'>;

/** Starts the provider simulator with the `SIM_PROVIDER_*` settings of the configuration. */
export function startProviderSimulatorFromConfig(config: SimulatorSettings, log?: Logger): Promise<ProviderSimulator> {
  return startProviderSimulator({
    port: config.simProviderPort,
    latencyMs: config.simProviderLatencyMs,
    failureRate: config.simProviderFailureRate,
    defaultConcurrency: config.simProviderConcurrency,
    log,
  });
}
