import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { freeLoopbackPort as freePort } from '../db/postgres';

/** Servers under benchmark run in their own processes, so the load generator does not share their event loop. */
export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

const distRoot = path.join(__dirname, '..');

async function waitForHealth(url: string, child: ChildProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`process exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer /healthz`);
}

function stopper(child: ChildProcess): () => Promise<void> {
  return () =>
    new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
}

/** The bare Koa baseline (`bare-koa.ts`); with `bodyFile`, its other paths answer that file's bytes. */
export async function startBareKoa(bodyFile?: string): Promise<ServiceProcess> {
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), ...(bodyFile ? { BODY_FILE: bodyFile } : {}) };
  const child = spawn(process.execPath, [path.join(distRoot, 'scripts', 'bare-koa.js')], { env, stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, child);
  return { url, child, stop: stopper(child) };
}

/**
 * A real service process (`node dist/main.js <roles>`) on the given database and storage. Without a
 * PROVIDER_URL in `env` it gets a closed port: a role on a configured database refuses to start
 * without one, and the benchmarked requests never call the provider.
 */
export async function startService(roles: string[], env: Record<string, string>): Promise<ServiceProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(distRoot, 'main.js'), ...roles], {
    env: { ...process.env, LOG_LEVEL: 'info', PROVIDER_URL: 'http://127.0.0.1:9', ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, child);
  return { url, child, stop: stopper(child) };
}

/**
 * A job role (`node dist/main.js scheduler|worker|media`), which serves no HTTP: ready once it logs
 * that its role started (pino flushes within a second).
 */
export async function startRole(role: string, env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<Omit<ServiceProcess, 'url'>> {
  const child = spawn(process.execPath, [path.join(distRoot, 'main.js'), role], {
    // Its readiness is read from its info log.
    env: { ...process.env, ...env, LOG_LEVEL: 'info', PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`${role} did not start within ${timeoutMs} ms`)), timeoutMs);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"msg":"role started"')) {
        clearTimeout(timer);
        // The rest of its log is not read: drain it so the pipe never fills.
        child.stdout!.removeAllListeners('data');
        child.stdout!.resume();
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code} before it started`)));
  });
  return { child, stop: stopper(child) };
}
