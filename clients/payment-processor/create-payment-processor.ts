import type { Config } from '../../config';
import { ProcessorClient } from './client';
import type { PaymentProcessor } from './payment-processor';

/**
 * Where the processor simulator is mounted on our own web app (README, "Simulators"), and so where
 * this client calls it when no processor is configured.
 */
export const SIMULATOR_PREFIX = '/sim/processor';

/** Where the processor's API is: the configured URL, or the simulator mounted on our own web app. */
export function processorBaseUrl(config: Config): string {
  return config.payments.processorUrl ?? `${config.publicBaseUrl}${SIMULATOR_PREFIX}`;
}

export function createPaymentProcessor(config: Config): PaymentProcessor {
  const settings = config.payments;
  return new ProcessorClient({
    baseUrl: processorBaseUrl(config),
    userName: settings.processorLogin,
    password: settings.processorPassword,
    notificationSecret: settings.notificationSecret,
    sessionTimeoutS: settings.sessionTimeoutS,
    // A renewal's charge is bounded like the registration: both ask the processor to act.
    timeouts: { registerMs: settings.registerTimeoutMs, statusMs: settings.statusTimeoutMs, chargeMs: settings.registerTimeoutMs },
  });
}
