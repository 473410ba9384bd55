import '../runtime-check';
import { spawnSync } from 'node:child_process';
import path from 'node:path';

/**
 * `npm run bench`: runs each benchmark in its own process (each starts its own Postgres and object
 * store), one after the other. Every figure is printed beside a baseline measured in the same run
 * (a bare Koa route, raw pg-boss throughput), because these machines are noisy: compare ratios.
 */
const benches = [
  ['bench-http.js', 'HTTP stack and accounts'],
  ['bench-catalog.js', 'catalog on 10,000 effects'],
  ['bench-generations.js', 'generation pipeline'],
  ['bench-queue.js', 'queue position of a pending generation'],
  ['bench-subscriptions.js', 'subscription renewals'],
  ['bench-streams.js', 'SSE streams'],
] as const;

let failed = 0;
for (const [script, title] of benches) {
  console.log(`\n# ${title}`);
  const run = spawnSync(process.execPath, [path.join(__dirname, script)], { stdio: 'inherit' });
  if (run.status !== 0) failed += 1;
}
process.exit(failed ? 1 : 0);
