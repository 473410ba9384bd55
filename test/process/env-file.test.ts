import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const dist = path.join(__dirname, '..', '..');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs Node in `cwd` with only `env` (and PATH): what a developer's shell would start there. */
function runNode(args: string[], cwd: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd, env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }));
  });
}

describe('.env in the working directory', () => {
  let folder: string;
  beforeEach(() => {
    folder = mkdtempSync(path.join(os.tmpdir(), 'env-file-'));
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  const readBack = `
    const { loadEnvFileIfPresent } = require(${JSON.stringify(path.join(dist, 'process', 'env-file.js'))});
    const file = loadEnvFileIfPresent();
    const { ONLY_IN_FILE, IN_BOTH, EMPTY_IN_ENV } = process.env;
    process.stdout.write(JSON.stringify({ file, ONLY_IN_FILE, IN_BOTH, EMPTY_IN_ENV }));`;

  it('fills the variables the environment lacks; the environment wins, an empty variable included', async () => {
    writeFileSync(path.join(folder, '.env'), 'ONLY_IN_FILE=from-file  # a note\nIN_BOTH=from-file\nEMPTY_IN_ENV=from-file\n');
    const run = await runNode(['-e', readBack], folder, { IN_BOTH: 'from-env', EMPTY_IN_ENV: '' });
    expect(run.stderr).to.equal('');
    expect(JSON.parse(run.stdout)).to.deep.equal({
      file: path.join(folder, '.env'), ONLY_IN_FILE: 'from-file', IN_BOTH: 'from-env', EMPTY_IN_ENV: '',
    });
  });

  it('reads the file ENV_FILE names instead, and none with ENV_FILE=off (the processes tests and benchmarks start)', async () => {
    writeFileSync(path.join(folder, '.env'), 'ONLY_IN_FILE=from-dot-env\n');
    writeFileSync(path.join(folder, 'staging.env'), 'ONLY_IN_FILE=from-staging\n');
    const named = await runNode(['-e', readBack], folder, { ENV_FILE: 'staging.env' });
    expect(JSON.parse(named.stdout)).to.deep.equal({ file: path.join(folder, 'staging.env'), ONLY_IN_FILE: 'from-staging' });
    const off = await runNode(['-e', readBack], folder, { ENV_FILE: 'off' });
    expect(JSON.parse(off.stdout)).to.deep.equal({ file: null });
  });

  it('changes nothing without a .env', async () => {
    const run = await runNode(['-e', readBack], folder, { IN_BOTH: 'from-env' });
    expect(JSON.parse(run.stdout)).to.deep.equal({ file: null, IN_BOTH: 'from-env' });
  });

  // A bad PORT stops every entry point at loadConfig, before anything starts: which message it
  // names tells whose value was read.
  const entryPoints: [string, string[]][] = [
    ['node dist/main.js web', ['main.js', 'web']],
    ['npm run migrate', ['scripts/migrate.js']],
    ['npm run seed', ['scripts/seed.js']],
    ['npm run import-catalog', ['scripts/import-catalog.js', 'catalog.yaml']],
    ['npm run replay-failed', ['scripts/replay-failed.js', '--error-code', 'provider_error']],
    ['npm run user-effects', ['scripts/user-effects.js', 'archive', '7d1f0c4e-2b3a-4c5d-8e6f-9a0b1c2d3e4f', '--reason', 'a test']],
  ];
  for (const [name, [script, ...args]] of entryPoints) {
    it(`${name} reads it before its configuration, under the environment`, async function () {
      this.timeout(60_000);
      writeFileSync(path.join(folder, '.env'), 'PORT=not-a-port\n');
      // The import reads its file before its configuration: give it one to read.
      writeFileSync(path.join(folder, 'catalog.yaml'), 'effects: []\n');
      const fromFile = await runNode([path.join(dist, script), ...args], folder, { DATA_DIR: path.join(folder, 'data') });
      expect(fromFile.code).to.not.equal(0);
      expect(fromFile.stderr).to.include('PORT must be an integer');
      const fromEnvironment = await runNode([path.join(dist, script), ...args], folder, { DATA_DIR: path.join(folder, 'data'), PORT: '70000' });
      expect(fromEnvironment.code).to.not.equal(0);
      expect(fromEnvironment.stderr).to.include('PORT must be between 0 and 65535');
      expect(fromEnvironment.stderr).to.not.include('PORT must be an integer');
    });
  }
});
