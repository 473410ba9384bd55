import type { Middleware } from 'koa';
import { listenerUrl } from '../common/addresses';
import type { RunningPart, Services } from '../services';
import { logNotOffered } from '../services/catalog/not-offered';
import { applyUserEffectRuns } from '../db/user-effects/apply-user-effect-runs';
import type { ProcessorSimulator, ProcessorSimulatorOptions } from '../simulators/payment-processor/simulator';
import { createApp, requestListener } from './app';
import type { CatalogCache } from './catalog/catalog-cache';
import type { ThematicSearch } from './catalog/thematic-search';
import { taskCallback } from './generations/task-callback';
import { answerClientErrors } from './http/client-errors';
import type { ApiContext } from './http/context';
import { drainableServer } from './http/drain';
import { drainableH2cServer, type DrainableH2cServer } from './http/h2c-server';
import { listen } from '../common/listen';
import type { Route } from './http/route';
import { referenceRouter } from './docs/reference';
import { paymentMounts } from './payments/mounts';
import { startMetricsServer } from './metrics-server';
import { operatorConsole } from './ops/console';
import type { Realtime } from './realtime/streams';
import { referralPageRouter } from './referrals/page';
import { allRoutes } from './routes';
import { storeMount } from './store-mount';

/** What the web role plugs in besides its configuration; production sets none of it. */
export interface WebOptions {
  /** A thematic search backend (catalog rule 4); none is built yet. */
  thematicSearch?: ThematicSearch;
  /** Settings of the payment processor simulator mounted when no processor is configured. */
  processorSimulator?: Partial<ProcessorSimulatorOptions>;
  /** Routes served before the contract's (probes of the HTTP conventions). */
  extraRoutes?: Route[];
  /** How long a connection between requests must stay silent before the drain closes it (`api/http/drain.ts`). */
  drainQuietMs?: number;
}

export interface Web extends RunningPart {
  url: string;
  /** The HTTP/2 cleartext listener's (`H2C_PORT`), or null when it is off. */
  h2cUrl: string | null;
  /** The SSE streams of this process. */
  realtime: Realtime;
  /** The catalog answers this process keeps. */
  catalogCache: CatalogCache;
  processorSimulator: ProcessorSimulator | null;
}

/** Connections still open this long after the web role began to stop are closed hard. */
const drainTimeoutMs = 10_000;
/** Idle keep-alive connections are closed after this (above the 60 s idle timeout of the usual load balancers). */
const keepAliveTimeoutMs = 65_000;
/** Requests and SSE streams one HTTP/2 connection of a load balancer may carry at once. */
const h2cStreamsPerConnection = 1000;

/**
 * The `web` role: the REST API and its SSE streams on one HTTP server, with what lives beside the
 * route table (the payment webhook and pages, the processor simulator, the provider's task callbacks,
 * the referral page, the API reference at `/docs`, the object store's paths when its links are made
 * for this origin: `store-mount.ts`). Stopping drains the server (`http/drain.ts`): no
 * new connections, `Connection: close` on every answer still to come, each connection closed after
 * its current response, open streams ended.
 */
export async function startWeb(services: Services, options: WebOptions = {}): Promise<Web> {
  const payments = await paymentMounts(services, options.processorSimulator);
  const mounts: Middleware<ApiContext['state'], ApiContext>[] = [
    ...payments.mounts,
    referralPageRouter().routes() as Middleware<ApiContext['state'], ApiContext>,
    referenceRouter().routes() as Middleware<ApiContext['state'], ApiContext>,
  ];
  const routes = [...(options.extraRoutes ?? []), ...allRoutes(services.config.publicBaseUrl, { thematicSearch: options.thematicSearch })];
  const operators = operatorConsole(services);
  const store = storeMount(services.storage, services.config.publicBaseUrl);
  const app = createApp(services, routes, mounts, [...(store ? [store] : []), taskCallback(), operators.mount]);
  // Listening before the first request, so the first answers are already kept.
  await app.context.catalogCache.start();
  const handle = requestListener(app);
  // Timeouts are checked every few seconds rather than Node's default 30, so a slow client's 408 comes on time.
  const { server, drain } = drainableServer(handle, { connectionsCheckingInterval: Math.min(5000, services.config.requestTimeoutMs) }, { quietBeforeCloseMs: options.drainQuietMs });
  server.keepAliveTimeout = keepAliveTimeoutMs;
  answerClientErrors(server, services.log, services.config.requestTimeoutMs);
  const { host } = services.config;
  const port = await listen(server, services.config.port, host, 'PORT');
  services.log.info({ host, port }, 'web listening');
  const h2c = await startH2c(services, handle);
  announceConsole(services);
  // Once at start: user effects run on this configuration's routes, and the log says what the
  // catalog leaves out because no provider account can run it.
  await applyUserEffectRuns(services.db, services.config.marketplace.userEffectRuns);
  await logNotOffered(services.db, services.config.generations, services.log);
  const metrics = services.config.metrics.port === null ? null : await startMetricsServer(services, services.config.metrics.port);
  return {
    url: listenerUrl(host, port),
    h2cUrl: h2c && listenerUrl(host, h2c.port),
    realtime: app.context.realtime,
    catalogCache: app.context.catalogCache,
    processorSimulator: payments.processorSimulator,
    stop: async () => {
      await metrics?.stop();
      const drainMs = Math.min(drainTimeoutMs, services.config.shutdownTimeoutMs / 2);
      const drained = Promise.all([drain(drainMs), h2c?.drain(drainMs)]);
      // Open SSE streams are requests that never finish on their own: the drain waits for their end.
      await app.context.realtime.stop();
      app.context.catalogCache.stop();
      await drained;
      await operators.stop();
    },
  };
}

/** The HTTP/2 cleartext listener when `H2C_PORT` is set (`http/h2c-server.ts`). */
async function startH2c(services: Services, handler: ReturnType<typeof requestListener>): Promise<(DrainableH2cServer & { port: number }) | null> {
  if (services.config.h2cPort === null) return null;
  const h2c = drainableH2cServer(handler, {
    maxConcurrentStreams: h2cStreamsPerConnection,
    requestTimeoutMs: services.config.requestTimeoutMs,
    idleTimeoutMs: keepAliveTimeoutMs,
  });
  const port = await listen(h2c.server, services.config.h2cPort, services.config.host, 'H2C_PORT');
  services.log.info({ host: services.config.host, port }, 'web listening for HTTP/2 over cleartext (h2c)');
  return { ...h2c, port };
}

/**
 * Where the operator console is, and a warning when it is closed. A generated password is printed
 * by the start summary of main.ts (`process/start-summary.ts`), once, with the other facts of the start.
 */
function announceConsole({ config, log }: Services): void {
  const url = `${config.publicBaseUrl}/ops`;
  if (config.ops.password === null) log.warn({ url }, 'OPERATOR CONSOLE CLOSED: OPS_PASSWORD is not set, so every /ops path answers 401');
  else log.info({ url, user: config.ops.user }, 'operator console listening');
}
