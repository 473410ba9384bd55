import http, { type IncomingHttpHeaders } from 'node:http';
import type { Middleware } from 'koa';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '../media/storage';
import type { ApiContext } from './http/context';

/** Headers of one hop, not passed on. */
const hopHeaders = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

function passed(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !hopHeaders.has(name)));
}

function unreachable(res: http.ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const xml = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>ServiceUnavailable</Code><Message>The object store is not reachable.</Message></Error>';
  res.writeHead(503, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(xml), 'Retry-After': '1' });
  res.end(xml);
}

/**
 * When the store's links are made for this web process's own origin (the embedded default: one
 * address for everything a client gets), `/<bucket>` and everything under it goes to the store as it
 * came, Host included: the store checks each signature against the host and path it was made for,
 * so nothing here judges a request and a link keeps S3's meaning (a fixed port of the store's own
 * would work as well, but is one more address for a phone to reach). A raw mount: the store reads
 * its own bodies; a connection to the store each (a kept-alive one may close just as it is reused).
 * Null when the links point elsewhere (a real S3, a CDN).
 */
export function storeMount(storage: Storage, publicBaseUrl: string): Middleware<ApiContext['state'], ApiContext> | null {
  if (new URL(storage.settings.publicUrl).origin !== new URL(publicBaseUrl).origin) return null;
  const root = `/${storage.bucket}`;
  const store = new URL(storage.settings.endpoint);
  return async (ctx, next) => {
    if (ctx.path !== root && !ctx.path.startsWith(`${root}/`)) return next();
    ctx.respond = false;
    ctx.state.route = `${root}/{key}`;
    const { req, res } = ctx;
    await new Promise<void>((resolve) => {
      let answered = false;
      const upstream = http.request({ hostname: store.hostname.replace(/^\[(.*)\]$/, '$1'), port: store.port, agent: false, method: req.method, path: req.url, headers: passed(req.headers) });
      upstream.once('response', (answer) => {
        answered = true;
        res.writeHead(answer.statusCode ?? 502, passed(answer.headers));
        pipeline(answer, res).catch(() => res.destroy()).finally(resolve);
      });
      upstream.on('error', () => {
        // The store may answer before the body's end (a file too large) and close: the rest is read and dropped.
        req.unpipe(upstream);
        req.resume();
        if (answered) return;
        unreachable(res);
        resolve();
      });
      req.once('close', () => {
        if (!req.complete) upstream.destroy();
      });
      req.pipe(upstream);
    });
  };
}
