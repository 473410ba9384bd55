import '../process/runtime-check';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { figurePrefix, type BenchFigure } from './bench-figures';

/**
 * `npm run bench`: runs each benchmark in its own process (each starts its own Postgres and object
 * store), one after the other. Every figure is printed beside a baseline measured in the same run
 * (a bare Koa route, raw pg-boss throughput), because these machines are noisy: compare ratios.
 * At the end, every figure in one table, each beside its same-run baseline and its goal.
 */
const benches = [
  ['bench-http.js', 'HTTP stack and accounts'],
  ['bench-catalog.js', 'catalog on 10,000 effects'],
  ['bench-generations.js', 'generation pipeline'],
  ['bench-idle.js', 'a lone generation on an idle system'],
  ['bench-queue.js', 'queue position of a pending generation'],
  ['bench-subscriptions.js', 'subscription renewals'],
  ['bench-streams.js', 'SSE streams'],
] as const;

/** Runs one benchmark script, echoing its output and keeping its `FIGURE` lines. */
function run(script: string, figures: BenchFigure[]): Promise<number> {
  const child = spawn(process.execPath, [path.join(__dirname, script)], { stdio: ['ignore', 'pipe', 'inherit'] });
  createInterface({ input: child.stdout }).on('line', (line) => {
    if (line.startsWith(figurePrefix)) figures.push(JSON.parse(line.slice(figurePrefix.length)) as BenchFigure);
    else console.log(line);
  });
  return new Promise((resolve) => child.on('close', (code) => resolve(code ?? 1)));
}

async function main(): Promise<void> {
  const figures: BenchFigure[] = [];
  let failed = 0;
  for (const [script, title] of benches) {
    console.log(`\n# ${title}`);
    if ((await run(script, figures)) !== 0) failed += 1;
  }
  console.log('\n# The figures (this run; compare ratios, the machine is shared)\n');
  console.log('| figure | this run | baseline (same run) | goal | met |');
  console.log('|---|---|---|---|---|');
  for (const figure of figures) {
    console.log(`| ${figure.figure} | ${figure.value} | ${figure.baseline} | ${figure.goal} | ${figure.met === null ? '' : figure.met ? 'yes' : 'no'} |`);
  }
  process.exit(failed ? 1 : 0);
}

void main();
