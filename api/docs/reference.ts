import { readFileSync } from 'node:fs';
import Router from '@koa/router';
import type { ApiContext } from '../http/context';
import { sendPage, type PagePolicy } from '../../media/pages/headers';
import { html } from '../../media/pages/html';
import { changelogPath, sendChangelog } from './changelog';

/**
 * `GET /docs`: the browsable API reference, Redoc's standalone bundle from node_modules (works
 * offline, loads nothing from elsewhere) rendering `/v1/openapi.json`; its options are attributes of
 * the `<redoc spec-url>` element, so the page has no inline script.
 *
 * Its Content-Security-Policy is looser than the layout pages': scripts and the document from this
 * origin, Redoc's search worker from `blob:`, and the two `<style>` elements Redoc writes allowed by
 * hash (styled-components then fills its own through the CSSOM), so no `'unsafe-inline'`. The
 * bundle's one remote address, the Redocly logo, is replaced with an empty local image. A new Redoc
 * may write other stylesheets: the Chromium test (`test/api/docs/`) names the hash of any it blocks.
 */
const redocStyleHashes = ["'sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc='", "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"];

const referencePolicy: PagePolicy = {
  sources: { script: ["'self'"], style: redocStyleHashes, img: ["'self'", 'data:'], connect: ["'self'"], worker: ['blob:'] },
};

const remoteLogo = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const emptyImage = 'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22/%3E';

const bundlePath = '/docs/redoc.standalone.js';

// Redoc's own fonts would come from a font service; the system's read as well and load from nowhere.
const theme = {
  typography: {
    fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", Arial, sans-serif',
    headings: { fontFamily: 'system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", Arial, sans-serif' },
    code: { fontFamily: 'ui-monospace, "SF Mono", Menlo, Consolas, monospace' },
  },
};

const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Effects API reference</title>
</head>
<body>
<redoc spec-url="/v1/openapi.json" required-props-first="true" expand-responses="200,201,202" theme="${JSON.stringify(theme)}"></redoc>
<script src="${bundlePath}"></script>
</body>
</html>`;

let bundle: string | null = null;

export function referenceRouter(): Router<ApiContext['state'], ApiContext> {
  const router = new Router<ApiContext['state'], ApiContext>();
  router.get('/docs', (ctx) => {
    sendPage(ctx, { html: page.toString(), policy: referencePolicy, cacheControl: 'no-cache' });
  });
  router.get(changelogPath, (ctx) => sendChangelog(ctx));
  router.get(bundlePath, (ctx) => {
    bundle ??= readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8').replaceAll(remoteLogo, emptyImage);
    ctx.type = 'application/javascript; charset=utf-8';
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = bundle;
  });
  return router;
}
