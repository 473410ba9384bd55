import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, lstatSync, readdirSync } from 'node:fs';
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

describe('building dist/ under running processes (issue 16, item 16)', () => {
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
});
