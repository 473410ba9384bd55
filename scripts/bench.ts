import { startSharedInfrastructure, stopSharedInfrastructure, databaseUrl, storageSettings } from '../test/harness';
import { startBareKoa, startService } from './bench-processes';
import { compareLoads, formatLoad, runLoad } from './load';

/**
 * `npm run bench`: every figure is reported beside a baseline measured in the same run (a bare Koa
 * route in its own process), because these machines are noisy. Ratios are what to compare.
 */
async function benchHttpStack(env: Record<string, string>): Promise<void> {
  const bare = await startBareKoa();
  const web = await startService(['web'], env);
  try {
    const { baseline, subject, ratio } = await compareLoads(
      () => runLoad(bare.url, () => ({ path: '/healthz' }), { durationMs: 3000 }),
      () => runLoad(web.url, () => ({ path: '/healthz' }), { durationMs: 3000 }),
    );
    console.log('\n## HTTP stack: GET /healthz through every middleware vs a bare Koa route');
    console.log(formatLoad('bare Koa', baseline));
    console.log(formatLoad('full stack (id, log, envelope, body, router)', subject));
    console.log(`ratio: ${(ratio * 100).toFixed(1)}% of bare Koa (target >= 80%)`);
  } finally {
    await web.stop();
    await bare.stop();
  }
}

async function main(): Promise<void> {
  await startSharedInfrastructure();
  const storage = storageSettings();
  const env = {
    DATABASE_URL: databaseUrl(),
    S3_ENDPOINT: storage.endpoint,
    S3_ACCESS_KEY: storage.accessKey,
    S3_SECRET_KEY: storage.secretKey,
    S3_BUCKET: storage.bucket,
    TOKEN_SECRET: 'bench-token-secret-that-is-long-enough-0123456789',
  };
  try {
    await benchHttpStack(env);
  } finally {
    await stopSharedInfrastructure();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
