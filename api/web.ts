import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { allRoutes } from './routes';
import type { Middleware } from 'koa';
import type { ApiContext } from './http/context';
import { paymentMounts } from './payments/mounts';
import { startMetricsServer } from './metrics-server';
import { referralPageRouter } from './referrals/page';
import type { RunningPart, Services } from './services';

/**
 * The `web` role: the REST API and its SSE streams on one HTTP server. Stopping refuses new
 * connections, ends open streams and lets in-flight requests finish.
 */
export async function startWeb(services: Services): Promise<RunningPart & { url: string }> {
  const mounts: Middleware<ApiContext['state'], ApiContext>[] = [...paymentMounts(services), referralPageRouter().routes() as Middleware<ApiContext['state'], ApiContext>];
  const app = createApp(services, allRoutes(services.config.publicBaseUrl), mounts);
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(services.config.port, '0.0.0.0', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  services.log.info({ port }, 'web listening');
  const metrics = services.config.metrics.port === null ? null : await startMetricsServer(services, services.config.metrics.port);
  return {
    url: `http://127.0.0.1:${port}`,
    stop: async () => {
      await metrics?.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Open SSE streams are requests that never finish on their own: end them, then the idle sockets.
      await app.context.realtime.stop();
      server.closeIdleConnections();
      await closed;
    },
  };
}
