import type { Config } from '../../config';
import type { Circuits } from '../../common/circuit';
import { ProcessorClient } from './client';
import type { PaymentProcessor } from './payment-processor';

/**
 * Where the processor simulator is mounted on our own web app (docs/operations.md, "Simulators"), and so where
 * this client calls it when no processor is configured.
 */
export const SIMULATOR_PREFIX = '/sim/processor';

/** Where the processor's API is: the configured URL, or the simulator mounted on our own web app. */
export function processorBaseUrl(config: Config): string {
  return config.payments.processorUrl ?? `${config.publicBaseUrl}${SIMULATOR_PREFIX}`;
}

/**
 * The processor client, its calls guarded by the circuit of `circuits` named after its API. The
 * caller chooses where that circuit lives: every role calls the processor (creation, refresh and
 * webhook on the web, reconciliation on the scheduler, renewals on the worker), so production keeps
 * it in Postgres (`services/payments/payment-processor.ts`).
 */
export function createPaymentProcessor(config: Config, circuits: Circuits): PaymentProcessor {
  const settings = config.payments;
  const baseUrl = processorBaseUrl(config);
  return new ProcessorClient({
    baseUrl,
    userName: settings.processorLogin,
    password: settings.processorPassword,
    notificationSecret: settings.notificationSecret,
    sessionTimeoutS: settings.sessionTimeoutS,
    // A renewal's charge is bounded like the registration: both ask the processor to act.
    timeouts: { registerMs: settings.registerTimeoutMs, statusMs: settings.statusTimeoutMs, chargeMs: settings.registerTimeoutMs },
    // A probe that outlives the longest call's time limit is taken as lost: another caller probes.
    circuit: circuits.of(`payment processor ${baseUrl}`, Math.max(settings.registerTimeoutMs, settings.statusTimeoutMs) + 1000),
  });
}
