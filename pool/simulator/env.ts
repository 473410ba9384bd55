import { ConfigError } from '../../config';
import type { Logger } from '../../logger';
import { startProviderSimulator, type ProviderSimulator } from './provider-simulator';

type Env = Record<string, string | undefined>;

/** Starts the provider simulator as the `sim-provider` process configures it through the environment. */
export async function runProviderSimulatorFromEnv(env: Env = process.env, log?: Logger): Promise<ProviderSimulator> {
  return startProviderSimulator({
    port: numberFrom(env, 'SIM_PROVIDER_PORT', 0, { max: 65535, integer: true }),
    latencyMs: numberFrom(env, 'SIM_PROVIDER_LATENCY_MS', 1500, { integer: true }),
    failureRate: numberFrom(env, 'SIM_PROVIDER_FAILURE_RATE', 0, { max: 1 }),
    defaultConcurrency: numberFrom(env, 'SIM_PROVIDER_CONCURRENCY', 4, { min: 1, integer: true }),
    log,
  });
}

function numberFrom(env: Env, name: string, fallback: number, rule: { min?: number; max?: number; integer?: boolean }): number {
  const raw = env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  const { min = 0, max = Infinity, integer = false } = rule;
  if (!Number.isFinite(value) || (integer && !Number.isInteger(value)) || value < min || value > max) {
    const range = max === Infinity ? `at least ${min}` : `between ${min} and ${max}`;
    throw new ConfigError(`${name} must be ${integer ? 'an integer' : 'a number'} ${range}`);
  }
  return value;
}
