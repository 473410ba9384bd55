import Koa from 'koa';
import { listenerUrl } from '../common/addresses';
import { answerClientErrors } from './http/client-errors';
import type { ApiContext } from './http/context';
import { drainableServer } from './http/drain';
import { errorEnvelope } from './http/error-envelope';
import { listen } from '../common/listen';
import { requestId } from './http/request-id';
import { metricsRouter } from './metrics';
import type { RunningPart, Services } from '../services';

/**
 * METRICS_PORT: `/metrics` on a listener of its own (a port the load balancer does not expose),
 * and nothing else on it; the main port then answers 404 there. METRICS_TOKEN applies here too.
 */
export async function startMetricsServer(services: Services, port: number): Promise<RunningPart & { url: string }> {
  const app = new Koa<ApiContext['state'], ApiContext>();
  app.context.services = services;
  app.silent = true;
  app.use(requestId());
  app.use(errorEnvelope(services.log));
  app.use(metricsRouter().routes());
  const { server, drain } = drainableServer(app.callback());
  answerClientErrors(server, services.log, services.config.requestTimeoutMs);
  const listening = await listen(server, port, services.config.host, 'METRICS_PORT');
  services.log.info({ host: services.config.host, port: listening }, 'metrics listening');
  return {
    url: listenerUrl(services.config.host, listening),
    stop: () => drain(2000),
  };
}
