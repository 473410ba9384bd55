import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';

const run = promisify(execFile);

/**
 * A small run of `npm run loadtest` as a newcomer sees it: a summary table on stdout (not raw JSON),
 * where the report went, and nothing but the progress bar on stderr (no Node warning such as
 * MaxListenersExceededWarning in the middle of it).
 */
describe('npm run loadtest, a small run', function () {
  this.timeout(180_000);
  let outDir: string;

  before(() => {
    outDir = mkdtempSync(path.join(os.tmpdir(), 'loadtest-'));
  });
  after(() => rmSync(outDir, { recursive: true, force: true }));

  it('prints a summary table and where it wrote the report, with no warning on stderr', async () => {
    const script = path.join(__dirname, '..', '..', 'scripts', 'loadtest.js');
    const { stdout, stderr } = await run(process.execPath, [script, '--users', '3', '--per-user', '1', '--ramp-s', '1', '--accounts', '1', '--slots', '2', '--latency-ms', '200', '--failure-rate', '0', '--out', outDir], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const lines = stdout.split('\n');
    expect(lines[0]).to.match(/^measure\s+result$/);
    expect(lines[1]).to.match(/^-+\s+-+$/);
    const rows = lines.slice(2, lines.indexOf(''));
    expect(rows.map((row) => row.split(/\s{2,}/)[0])).to.deep.equal([
      'settings', 'generations', 'throughput', 'slot utilisation', 'queue wait p50 / p95 / p99',
      'time to terminal p50 / p95 / p99', 'streams', 'invariants', 'services log',
    ]);
    expect(stdout).to.contain('3 created, 3 terminal: 3 succeeded, 0 failed');
    expect(stdout).to.contain('no generation lost: true; credits conserved: true');
    expect(stdout).not.to.match(/^\s*[{[]/m);
    for (const file of ['loadtest-report.json', 'loadtest-report.html', 'loadtest-chart.png', 'loadtest-services.log']) {
      expect(stdout).to.contain(path.join(outDir, file));
      expect(existsSync(path.join(outDir, file)), file).to.equal(true);
    }
    expect(JSON.parse(readFileSync(path.join(outDir, 'loadtest-report.json'), 'utf8')).generations.created).to.equal(3);
    const progressOnly = stderr.split(/[\r\n]+/).filter(Boolean).filter((line) => !/^\[[#.]+\] \d+\/\d+ terminal/.test(line) && !/^starting "/.test(line));
    expect(progressOnly, stderr).to.deep.equal([]);
  });

  it('--kind fal: the accounts are fal keys, the simulator speaks fal\'s queue and the catalog is routed on it; every generation succeeds', async () => {
    const script = path.join(__dirname, '..', '..', 'scripts', 'loadtest.js');
    const kindDir = path.join(outDir, 'fal');
    const { stdout } = await run(process.execPath, [script, '--kind', 'fal', '--users', '2', '--per-user', '1', '--ramp-s', '1', '--accounts', '1', '--slots', '2', '--latency-ms', '200', '--failure-rate', '0', '--out', kindDir], {
      maxBuffer: 16 * 1024 * 1024,
    });
    expect(stdout).to.contain('1 fal accounts x 2 slots');
    expect(stdout).to.contain('2 created, 2 terminal: 2 succeeded, 0 failed');
    const report = JSON.parse(readFileSync(path.join(kindDir, 'loadtest-report.json'), 'utf8')) as { settings: { kind: string }; invariants: { noGenerationLost: boolean } };
    expect(report.settings.kind).to.equal('fal');
    expect(report.invariants.noGenerationLost).to.equal(true);
  });

  it('a web process and a worker process of their own: the provider\'s callbacks reach the web role', async () => {
    const script = path.join(__dirname, '..', '..', 'scripts', 'loadtest.js');
    const apartDir = path.join(outDir, 'apart');
    await run(process.execPath, [script, '--process', 'web', '--process', 'worker media', '--users', '2', '--per-user', '1', '--ramp-s', '1', '--accounts', '1', '--slots', '2', '--latency-ms', '200', '--failure-rate', '0', '--out', apartDir], {
      maxBuffer: 16 * 1024 * 1024,
    });
    const report = JSON.parse(readFileSync(path.join(apartDir, 'loadtest-report.json'), 'utf8')) as { generations: { succeeded: number }; provider: { callbacksAnswered: number } };
    expect(report.generations.succeeded).to.equal(2);
    expect(report.provider.callbacksAnswered).to.equal(2);
  });

  it('refuses a kind that does not exist, naming the kinds', async () => {
    const script = path.join(__dirname, '..', '..', 'scripts', 'loadtest.js');
    const refused = await run(process.execPath, [script, '--kind', 'openai']).then(() => null, (error: { stderr: string }) => error.stderr);
    expect(refused).to.contain('--kind takes simulator, replicate, fal, not openai');
  });
});
