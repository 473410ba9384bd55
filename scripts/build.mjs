// Builds the TypeScript into `dist` without ever pulling code out from under a running process.
//
//   node scripts/build.mjs               build now
//   node scripts/build.mjs --if-changed  build only when a source differs from the build dist points to
//
// tsc writes a fresh sibling directory `.dist-<id>`; `dist` is a symlink, replaced in one rename.
// A process started as `node dist/main.js` resolves the link once, at start (Node loads modules by
// their real path), so it keeps running on the build it started with while a script rebuilds.
// The newest builds are kept (a process running from an older one still finds its files).
// Its messages and the compiler's go to stderr: the npm scripts that run it first (`npm run --silent
// replay-failed ... > plan.txt`) keep stdout for their own result.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const keptBuilds = 5;
const stampFile = '.sources-sha256';
const sourceFolders = ['api', 'workers', 'services', 'pool', 'db', 'media', 'clients', 'common', 'process', 'simulators', 'migrations', 'scripts', 'test'];

/** One hash over every TypeScript source and the files that change how it compiles. */
export function sourcesHash(root) {
  const files = fs.readdirSync(root).filter((name) => name.endsWith('.ts')).concat(['tsconfig.json', 'package-lock.json']);
  const walk = (folder) => {
    for (const entry of fs.readdirSync(path.join(root, folder), { withFileTypes: true })) {
      const relative = path.join(folder, entry.name);
      if (entry.isDirectory()) walk(relative);
      else if (entry.name.endsWith('.ts')) files.push(relative);
    }
  };
  for (const folder of sourceFolders) if (fs.existsSync(path.join(root, folder))) walk(folder);
  const hash = createHash('sha256');
  for (const file of files.sort()) {
    const full = path.join(root, file);
    if (fs.existsSync(full)) hash.update(`${file}\0`).update(fs.readFileSync(full)).update('\0');
  }
  return hash.digest('hex');
}

/** Whether `dist` holds a complete build of exactly these sources. */
export function isCurrent(root, hash) {
  try {
    return fs.readFileSync(path.join(root, 'dist', stampFile), 'utf8') === hash;
  } catch {
    return false;
  }
}

/**
 * Points `dist` at `buildName` (a directory beside it) in one rename, then removes all but the
 * newest builds. A `dist` that is still a plain directory (older checkouts) is moved aside first.
 */
export function swapIn(root, buildName) {
  const dist = path.join(root, 'dist');
  const stat = fs.lstatSync(dist, { throwIfNoEntry: false });
  if (stat?.isDirectory()) fs.renameSync(dist, path.join(root, `.dist-${timestamp()}-legacy`));
  const link = path.join(root, `.dist-link-${process.pid}`);
  fs.rmSync(link, { force: true });
  fs.symlinkSync(buildName, link, 'dir');
  fs.renameSync(link, dist);
  // Names start with the build's time, so the newest sort last.
  const older = fs.readdirSync(root).filter((name) => /^\.dist-\d/.test(name) && name !== buildName).sort().reverse();
  for (const name of older.slice(keptBuilds - 1)) fs.rmSync(path.join(root, name), { recursive: true, force: true });
}

function timestamp() {
  return new Date().toISOString().replace(/\D/g, '').slice(0, 17);
}

function build(root) {
  const hash = sourcesHash(root);
  const buildName = `.dist-${timestamp()}-${process.pid}`;
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const compiled = spawnSync(process.execPath, [tsc, '-p', root, '--outDir', path.join(root, buildName)], { stdio: ['inherit', 2, 'inherit'] });
  if (compiled.status !== 0) {
    fs.rmSync(path.join(root, buildName), { recursive: true, force: true });
    process.exit(compiled.status ?? 1);
  }
  fs.writeFileSync(path.join(root, buildName, stampFile), hash);
  swapIn(root, buildName);
  console.error(`built ${buildName}; dist points to it`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  if (process.argv.includes('--if-changed') && isCurrent(root, sourcesHash(root))) {
    console.error('dist is up to date');
  } else {
    build(root);
  }
}
