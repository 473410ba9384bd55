import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { allRoutes } from './routes';
import type { RunningPart, Services } from './services';

/**
 * The `web` role: the REST API and its SSE streams on one HTTP server. Stopping refuses new
 * connections and lets in-flight requests finish.
 */
export async function startWeb(services: Services): Promise<RunningPart & { url: string }> {
  const app = createApp(services, allRoutes(services.config.publicBaseUrl));
  const server = http.createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(services.config.port, '0.0.0.0', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  services.log.info({ port }, 'web listening');
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
