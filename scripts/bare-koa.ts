import Koa from 'koa';

/** The baseline of every HTTP benchmark: a bare Koa route, nothing else, in its own process. */
const app = new Koa();
app.use((ctx) => {
  ctx.body = { status: 'ok' };
});
const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
