// The tests of the provider path once more for each real provider kind (`test/provider-kind.ts`):
// the whole suite ran them on the simulator's own protocol; here the fixtures' accounts and routes
// are Replicate's, then fal's, against the simulator's front of that protocol. Both kinds run at
// once (each mocha run has its own Postgres and object store): the tests mostly wait on the
// provider's latency, so two at once take little longer than one. Each run's output is printed
// whole when it ends, so a failure reads as one block under its kind.
//
//   node scripts/test-kinds.mjs [kind ...]      (after a build; `npm test` runs it)
import { Buffer } from 'node:buffer';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Every test file where a generation goes through submission, callbacks, polls, cancels, error mapping or a lost answer. */
const providerPathFiles = [
  'workers/generations/pipeline',
  'workers/generations/task-callback',
  'workers/generations/submission-recovery',
  'workers/generations/provider-outage',
  'workers/generations/hand-over',
  'workers/generations/crash',
  'workers/generations/studio-pipeline',
  'workers/user-effects/moderation',
  'api/generations/cancel-race',
].map((name) => path.join('dist', 'test', `${name}.test.js`));

const kinds = process.argv.slice(2).length ? process.argv.slice(2) : ['replicate', 'fal'];

function run(kind) {
  const started = Date.now();
  return new Promise((resolve) => {
    const output = [];
    const child = spawn(path.join(root, 'node_modules', '.bin', 'mocha'), providerPathFiles, {
      cwd: root,
      env: { ...process.env, TEST_PROVIDER_KIND: kind },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('close', (code) => {
      const seconds = Math.round((Date.now() - started) / 1000);
      process.stdout.write(`\n=== provider path over ${kind}: ${code === 0 ? 'passed' : 'FAILED'} in ${seconds} s ===\n`);
      process.stdout.write(Buffer.concat(output));
      resolve(code === 0);
    });
  });
}

const results = await Promise.all(kinds.map(run));
process.exitCode = results.every(Boolean) ? 0 : 1;
