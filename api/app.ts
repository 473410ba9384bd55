import type { RequestListener } from 'node:http';
import Koa, { type Middleware } from 'koa';
import type { Services } from '../services';
import { bodyParser } from './http/body';
import type { ApiContext } from './http/context';
import { errorEnvelope } from './http/error-envelope';
import { requestId } from './http/request-id';
import { requestLog, requestObserver } from './http/request-log';
import type { Route } from './http/route';
import { buildRouter } from './http/router';
import { metricsRouter } from './metrics';
import { operationsRouter } from './operations';
import { htmlPageHeaders } from '../media/pages/headers';
import { Realtime } from './realtime/streams';
import { CatalogCache, catalogReplay } from './catalog/catalog-cache';

/**
 * The API's middleware chain, in the order it runs: request id, request log and latency metric, error
 * envelope, the strict headers of any HTML answer that set none, then the route table (body parsing
 * where a route takes one, authentication, limits, validation, handler per route). A request no
 * route matches goes on to the rest of the site: operations endpoints and `/metrics`, raw mounts
 * (the operator console, whose pg-boss dashboard reads its own bodies), body parsing, extra mounts
 * (simulators, webhooks, web pages), and last the route table's `404`/`405`. Routes come first
 * because they are most of the traffic and no mount serves a `/v1` path. Ahead of the chain,
 * `requestListener` sends again the catalog reads answered before. Each app owns the SSE streams of
 * its process (`app.context.realtime`) and its catalog cache (`app.context.catalogCache`), both
 * ended by the web role's stop.
 */
export function createApp(
  services: Services,
  routes: Route[],
  mounts: Middleware<ApiContext['state'], ApiContext>[] = [],
  rawMounts: Middleware<ApiContext['state'], ApiContext>[] = [],
): Koa<ApiContext['state'], ApiContext> {
  const app = new Koa<ApiContext['state'], ApiContext>({ proxy: services.config.trustProxy });
  app.context.services = services;
  app.context.realtime = new Realtime(services);
  app.context.catalogCache = new CatalogCache(services.listenHub, services.config.catalog, services.log);
  app.silent = true;

  const operations = operationsRouter();
  const parseBody = bodyParser(services.config.jsonBodyLimitBytes);
  const router = buildRouter(routes, parseBody);

  app.use(requestId());
  app.use(requestLog(requestObserver(services.log)));
  app.use(errorEnvelope(services.log));
  app.use(htmlPageHeaders());
  app.use(router.routes);
  app.use(operations.routes());
  // With METRICS_PORT, /metrics is served on that port only (api/metrics-server.ts).
  if (services.config.metrics.port === null) app.use(metricsRouter().routes());
  for (const mount of rawMounts) app.use(mount);
  app.use(parseBody);
  for (const mount of mounts) app.use(mount);
  app.use(router.allowedMethods);
  return app;
}

/**
 * What the servers call for each request: an anonymous catalog read answered before (most of the
 * traffic, the same bytes for everyone) is sent again from the catalog cache ahead of the chain
 * (`catalogReplay`), with its own id, log line and metric; everything else goes down `app`'s chain.
 */
export function requestListener(app: Koa<ApiContext['state'], ApiContext>): RequestListener {
  const replay = catalogReplay(app.context.catalogCache, requestObserver(app.context.services.log));
  const chain = app.callback();
  return (request, response) => {
    if (!replay(request, response)) void chain(request, response);
  };
}
