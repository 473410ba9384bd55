import { readFileSync } from 'node:fs';
import Koa from 'koa';

/**
 * The baseline of every HTTP benchmark: a bare Koa route, nothing else, in its own process. With
 * `BODY_FILE`, every path but `/healthz` answers that file's bytes as JSON: what sending a given
 * answer costs the server and its client with nothing computed.
 */
const fixedBody = process.env.BODY_FILE ? readFileSync(process.env.BODY_FILE) : null;
const app = new Koa();
app.use((ctx) => {
  if (fixedBody && ctx.path !== '/healthz') {
    ctx.set('Content-Type', 'application/json; charset=utf-8');
    ctx.body = fixedBody;
    return;
  }
  ctx.body = { status: 'ok' };
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
