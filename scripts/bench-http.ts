import type { ScratchStack } from '../process/scratch-stack';
import { benchAccounts } from './bench-accounts';
import { startBareKoa, startService, type ServiceProcess } from './bench-processes';
import { runBench } from './bench-runner';
import { compareLoads, formatLoad, runLoad, withServerCpu, type LoadResult } from './load';

/**
 * The HTTP part of `npm run bench`: every figure is reported beside a baseline measured in the same run (a bare Koa
 * route in its own process), because these machines are noisy. Ratios are what to compare.
 */
async function benchHttpStack(bare: ServiceProcess, web: ServiceProcess): Promise<LoadResult> {
  const healthz = (server: ServiceProcess) => () =>
    withServerCpu(server.child.pid!, () => runLoad(server.url, () => ({ path: '/healthz' }), { durationMs: 3000 }));
  const { baseline, subject, ratio } = await compareLoads(healthz(bare), healthz(web));
  const bareCpu = baseline.serverCpuUsPerRequest;
  const stackCpu = subject.serverCpuUsPerRequest;
  console.log('\n## HTTP stack: GET /healthz through every middleware vs a bare Koa route');
  console.log(`${formatLoad('bare Koa', baseline)}   server CPU ${bareCpu} us/request`);
  console.log(`${formatLoad('full stack (id, log, envelope, body, router)', subject)}   server CPU ${stackCpu} us/request`);
  console.log(`throughput under the same client: ${(ratio * 100).toFixed(1)}% of bare Koa (target >= 80%)`);
  console.log(`server capacity by CPU per request: ${((bareCpu / stackCpu) * 100).toFixed(1)}% of bare Koa (the client shares the 2 cores, so this is the stricter figure)`);
  return baseline;
}

async function main(stack: ScratchStack): Promise<void> {
  const env = stack.serviceEnv({
    // Every request of a benchmark comes from one address and a handful of users.
    RATE_AUTH_BURST: '100000000',
    RATE_AUTH_PER_MINUTE: '100000000',
    RATE_WRITE_BURST: '100000000',
    RATE_WRITE_PER_MINUTE: '100000000',
    RATE_READ_BURST: '100000000',
    RATE_READ_PER_MINUTE: '100000000',
  });
  const bare = await startBareKoa();
  const web = await startService(['web'], env);
  try {
    const baseline = await benchHttpStack(bare, web);
    await benchAccounts(web.url, baseline);
  } finally {
    await web.stop();
    await bare.stop();
  }
}

if (require.main === module) runBench(main);
