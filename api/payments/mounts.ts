import type { Middleware } from 'koa';
import type { Services } from '../../services';
import type { ProcessorSimulator, ProcessorSimulatorOptions } from '../../simulators/payment-processor/simulator';
import type { ApiContext } from '../http/context';
import { paymentPages } from './pages';
import { paymentWebhook, WEBHOOK_PATH } from './webhook';

/**
 * What payments add to the web app outside the route table: the processor's webhook, the payer's
 * return and fail pages, and, when no processor is configured, the processor simulator itself at
 * `/sim/processor` (docs/operations.md, "Simulators"), reached over HTTP like the real one. `simulator`
 * overrides the simulator's settings (its clock, its notification retries).
 */
export async function paymentMounts(services: Services, simulator: Partial<ProcessorSimulatorOptions> = {}): Promise<{
  mounts: Middleware<ApiContext['state'], ApiContext>[];
  processorSimulator: ProcessorSimulator | null;
}> {
  const { config } = services;
  const mounts: Middleware<ApiContext['state'], ApiContext>[] = [paymentWebhook(), paymentPages()];
  // Never beside a configured database: there, several processes would each have their own simulator.
  if (config.payments.processorUrl || config.databaseUrl) return { mounts, processorSimulator: null };
  // Loaded only here: a web process with a real processor never loads the simulator.
  const { createProcessorSimulator } = await import('../../simulators/payment-processor/simulator.js');
  const processorSimulator = createProcessorSimulator({
    publicBaseUrl: config.publicBaseUrl,
    userName: config.payments.processorLogin,
    password: config.payments.processorPassword,
    notificationSecret: config.payments.notificationSecret,
    callbackUrl: `${config.publicBaseUrl}${WEBHOOK_PATH}`,
    log: services.log,
    ...simulator,
  });
  mounts.push(processorSimulator.routes as Middleware<ApiContext['state'], ApiContext>);
  return { mounts, processorSimulator };
}
