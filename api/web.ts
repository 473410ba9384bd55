import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Middleware } from 'koa';
import type { RunningPart, Services } from '../services';
import type { ProcessorSimulator, ProcessorSimulatorOptions } from '../simulators/payment-processor/simulator';
import { createApp } from './app';
import type { CatalogCache } from './catalog/catalog-cache';
import type { ThematicSearch } from './catalog/thematic-search';
import { taskCallback } from './generations/task-callback';
import { answerClientErrors } from './http/client-errors';
import type { ApiContext } from './http/context';
import type { Route } from './http/route';
import { referenceRouter } from './docs/reference';
import { paymentMounts } from './payments/mounts';
import { startMetricsServer } from './metrics-server';
import type { Realtime } from './realtime/streams';
import { referralPageRouter } from './referrals/page';
import { allRoutes } from './routes';

/** What the web role plugs in besides its configuration; production sets none of it. */
export interface WebOptions {
  /** A thematic search backend (catalog rule 4); none is built yet. */
  thematicSearch?: ThematicSearch;
  /** Settings of the payment processor simulator mounted when no processor is configured. */
  processorSimulator?: Partial<ProcessorSimulatorOptions>;
  /** Routes served before the contract's (probes of the HTTP conventions). */
  extraRoutes?: Route[];
}

export interface Web extends RunningPart {
  url: string;
  /** The SSE streams of this process. */
  realtime: Realtime;
  /** The catalog answers this process keeps. */
  catalogCache: CatalogCache;
  processorSimulator: ProcessorSimulator | null;
}

/**
 * The `web` role: the REST API and its SSE streams on one HTTP server, with what lives beside the
 * route table (the payment webhook and pages, the processor simulator, the provider's task callbacks,
 * the referral page, the API reference at `/docs`). Stopping
 * refuses new connections, ends open streams and lets in-flight requests finish.
 */
export async function startWeb(services: Services, options: WebOptions = {}): Promise<Web> {
  const payments = paymentMounts(services, options.processorSimulator);
  const mounts: Middleware<ApiContext['state'], ApiContext>[] = [
    ...payments.mounts,
    taskCallback(),
    referralPageRouter().routes() as Middleware<ApiContext['state'], ApiContext>,
    referenceRouter().routes() as Middleware<ApiContext['state'], ApiContext>,
  ];
  const routes = [...(options.extraRoutes ?? []), ...allRoutes(services.config.publicBaseUrl, { thematicSearch: options.thematicSearch })];
  const app = createApp(services, routes, mounts);
  // Listening before the first request, so the first answers are already kept.
  await app.context.catalogCache.start();
  // Timeouts are checked every few seconds rather than Node's default 30, so a slow client's 408 comes on time.
  const server = http.createServer({ connectionsCheckingInterval: Math.min(5000, services.config.requestTimeoutMs) }, app.callback());
  server.keepAliveTimeout = 65_000;
  answerClientErrors(server, services.log, services.config.requestTimeoutMs);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(services.config.port, '0.0.0.0', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  services.log.info({ port }, 'web listening');
  const metrics = services.config.metrics.port === null ? null : await startMetricsServer(services, services.config.metrics.port);
  return {
    url: `http://127.0.0.1:${port}`,
    realtime: app.context.realtime,
    catalogCache: app.context.catalogCache,
    processorSimulator: payments.processorSimulator,
    stop: async () => {
      await metrics?.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Open SSE streams are requests that never finish on their own: end them, then the idle sockets.
      await app.context.realtime.stop();
      app.context.catalogCache.stop();
      server.closeIdleConnections();
      // A request still running now leaves its keep-alive socket idle only when it ends, and close()
      // would wait out keepAliveTimeout (65 s) for it: sweep the idle ones until the server is closed.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      await closed;
      clearInterval(sweep);
    },
  };
}
