import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync, lstatSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';

const root = path.join(__dirname, '..', '..', '..');

interface BuildModule {
  sourcesHash(root: string): string;
  isCurrent(root: string, hash: string): boolean;
  swapIn(root: string, buildName: string): void;
}

describe('building dist/ under running processes', () => {
  let build: BuildModule;
  let scratch: string;
  before(async () => {
    build = await import(pathToFileURL(path.join(root, 'scripts', 'build.mjs')).href) as BuildModule;
  });
  beforeEach(() => { scratch = mkdtempSync(path.join(os.tmpdir(), 'effects-build-')); });
  afterEach(() => rmSync(scratch, { recursive: true, force: true }));

  it('no operator script deletes or rebuilds dist/ unconditionally: each runs the built code, building only when sources changed', () => {
    const scripts: Record<string, string> = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts;
    for (const name of ['migrate', 'seed', 'import-catalog', 'bench', 'loadtest', 'replay-failed', 'prestart']) {
      expect(scripts[name], name).not.to.match(/npm run (build|clean)|rmSync|rm -rf/);
      expect(scripts[name], name).to.match(/^node scripts\/build\.mjs --if-changed( && node dist\/scripts\/[a-z-]+\.js)?$/);
    }
    expect(scripts.clean).to.equal(undefined);
  });

  it('swaps a new build in with one rename: a process keeps the files of the build it started from', () => {
    // An older checkout's dist is a plain directory; a process runs from it.
    mkdirSync(path.join(scratch, 'dist'));
    writeFileSync(path.join(scratch, 'dist', 'main.js'), 'old');
    const runningFrom = realpathSync(path.join(scratch, 'dist', 'main.js'));
    mkdirSync(path.join(scratch, '.dist-20261123000000001-1'));
    writeFileSync(path.join(scratch, '.dist-20261123000000001-1', 'main.js'), 'new');
    build.swapIn(scratch, '.dist-20261123000000001-1');
    expect(lstatSync(path.join(scratch, 'dist')).isSymbolicLink()).to.equal(true);
    expect(readFileSync(path.join(scratch, 'dist', 'main.js'), 'utf8')).to.equal('new');
    expect(readFileSync(realpathSync(path.join(scratch, 'dist', 'main.js')), 'utf8')).to.equal('new');
    expect(runningFrom).not.to.equal(realpathSync(path.join(scratch, 'dist', 'main.js')));
    // The old build's files moved with their directory, which is kept.
    const legacy = readdirSync(scratch).find((name) => name.endsWith('-legacy'))!;
    expect(readFileSync(path.join(scratch, legacy, 'main.js'), 'utf8')).to.equal('old');
  });

  it('keeps the five newest builds and removes older ones', () => {
    for (let index = 1; index <= 7; index += 1) {
      const name = `.dist-2026112300000000${index}-1`;
      mkdirSync(path.join(scratch, name));
      build.swapIn(scratch, name);
    }
    expect(readdirSync(scratch).filter((name) => name.startsWith('.dist-')).sort()).to.deep.equal(
      [3, 4, 5, 6, 7].map((index) => `.dist-2026112300000000${index}-1`),
    );
    expect(realpathSync(path.join(scratch, 'dist'))).to.equal(realpathSync(path.join(scratch, '.dist-20261123000000007-1')));
  });

  it('--if-changed: dist is current while no source changed since its build, and stale after a change', () => {
    mkdirSync(path.join(scratch, 'api'));
    writeFileSync(path.join(scratch, 'api', 'app.ts'), 'export const a = 1;');
    mkdirSync(path.join(scratch, '.dist-20261123000000001-1'));
    const hash = build.sourcesHash(scratch);
    writeFileSync(path.join(scratch, '.dist-20261123000000001-1', '.sources-sha256'), hash);
    build.swapIn(scratch, '.dist-20261123000000001-1');
    expect(build.isCurrent(scratch, build.sourcesHash(scratch))).to.equal(true);
    writeFileSync(path.join(scratch, 'api', 'app.ts'), 'export const a = 2;');
    expect(build.isCurrent(scratch, build.sourcesHash(scratch))).to.equal(false);
  });

  it('writes its messages and the compiler\'s on stderr: `npm run --silent <script> > file` holds only the script\'s result', function () {
    this.timeout(60_000);
    mkdirSync(path.join(scratch, 'scripts'));
    copyFileSync(path.join(root, 'scripts', 'build.mjs'), path.join(scratch, 'scripts', 'build.mjs'));
    symlinkSync(path.join(root, 'node_modules'), path.join(scratch, 'node_modules'), 'dir');
    writeFileSync(path.join(scratch, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, module: 'commonjs', target: 'es2022', types: [] }, include: ['api'] }));
    mkdirSync(path.join(scratch, 'api'));
    const run = (...args: string[]) => spawnSync(process.execPath, [path.join(scratch, 'scripts', 'build.mjs'), ...args], { encoding: 'utf8' });

    writeFileSync(path.join(scratch, 'api', 'app.ts'), "export const a: number = 'one';");
    const refused = run();
    expect(refused.status).not.to.equal(0);
    expect(refused.stdout).to.equal('');
    expect(refused.stderr).to.contain('error TS2322');

    writeFileSync(path.join(scratch, 'api', 'app.ts'), 'export const a: number = 1;');
    const built = run('--if-changed');
    expect(built.status, built.stderr).to.equal(0);
    expect(built.stdout).to.equal('');
    expect(built.stderr).to.match(/^built \.dist-\S+; dist points to it\n$/);
    const current = run('--if-changed');
    expect(current.stdout).to.equal('');
    expect(current.stderr).to.equal('dist is up to date\n');
  });
});
