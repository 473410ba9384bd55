import type { Middleware } from 'koa';
import type { ApiContext } from '../http/context';
import type { Services } from '../../services';
import { paymentPages } from './pages';
import { createProcessorSimulator } from '../../simulators/payment-processor/simulator';
import { paymentWebhook, WEBHOOK_PATH } from './webhook';

/**
 * What payments add to the web app outside the route table: the processor's webhook, the payer's
 * return and fail pages, and, when no processor is configured, the processor simulator itself at
 * `/sim/processor` (decisions.md section 6), reached over HTTP like the real one.
 */
export function paymentMounts(services: Services): Middleware<ApiContext['state'], ApiContext>[] {
  const { config } = services;
  const mounts: Middleware<ApiContext['state'], ApiContext>[] = [paymentWebhook(), paymentPages()];
  if (!config.payments.processorUrl) {
    const simulator = createProcessorSimulator({
      publicBaseUrl: config.publicBaseUrl,
      userName: config.payments.processorLogin,
      password: config.payments.processorPassword,
      notificationSecret: config.payments.notificationSecret,
      callbackUrl: `${config.publicBaseUrl}${WEBHOOK_PATH}`,
      log: services.log,
    });
    mounts.push(simulator.routes as Middleware<ApiContext['state'], ApiContext>);
  }
  return mounts;
}
