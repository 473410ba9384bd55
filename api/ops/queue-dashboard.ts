import { getRequestListener } from '@hono/node-server';
import { createDashboardHandler } from '@pg-boss/dashboard/handler';
import type { Middleware } from 'koa';
import type { Services } from '../../services';
import type { ApiContext } from '../http/context';

const dashboardPath = '/ops/queues';

/**
 * The official pg-boss dashboard (`@pg-boss/dashboard`, pinned to the version that bundles our
 * pg-boss) at `/ops/queues`, behind the console's credentials (`access.ts` runs first). It is a
 * React Router app answering Fetch `Request`s; `@hono/node-server` adapts Node's request to it.
 * It must see the raw request (its forms parse their own bodies), so it is mounted before the body
 * parser. Its pages hydrate with inline scripts, so it gets a policy of its own: everything from
 * this origin only, inline scripts and styles allowed, no framing. Its connection pool opens on
 * the first request and `close()` releases it.
 */
const dashboardPolicy = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const dashboardHeaders = {
  'Content-Security-Policy': dashboardPolicy,
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  // Not no-referrer: under it a browser sends `Origin: null` with the dashboard's own form posts,
  // which its Origin check (and ours) would refuse.
  'Referrer-Policy': 'same-origin',
};

export function queueDashboard(services: Services, databaseUrl: string): { mount: Middleware<ApiContext['state'], ApiContext>; close(): Promise<void> } {
  const handler = createDashboardHandler({
    databases: [{ url: databaseUrl, name: 'effects', schema: 'pgboss' }],
    basePath: dashboardPath,
    // Behind a proxy the browser's Origin is PUBLIC_BASE_URL's host, not the one this process sees.
    allowedActionOrigins: [new URL(services.config.publicBaseUrl).host],
  });
  // Left alone, the adapter replaces the process's global Request and Response with its own.
  const listener = getRequestListener(handler, { overrideGlobalObjects: false });
  return {
    mount: async (ctx, next) => {
      const { path } = ctx;
      if (path !== dashboardPath && path !== `${dashboardPath}.data` && !path.startsWith(`${dashboardPath}/`)) return next();
      ctx.state.route = `${dashboardPath}/*`;
      ctx.respond = false;
      // Set on the Node response, which keeps them when the adapter writes the dashboard's own
      // headers (it sets none of these). Not by copying its Response into a new one: a test's HTTP
      // interceptor (nock) may have replaced the global Response and Headers by then.
      for (const [name, value] of Object.entries(dashboardHeaders)) ctx.res.setHeader(name, value);
      await listener(ctx.req, ctx.res);
    },
    close: () => handler.close(),
  };
}
