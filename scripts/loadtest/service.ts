import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, type WriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { freeLoopbackPort as freePort } from '../../db/postgres';

/**
 * The service under load: real `node dist/main.js <roles>` processes on the run's database and
 * storage. Their warnings and errors go to one log file beside the report, and are counted.
 */
export interface ServiceProcess {
  roles: string;
  /** Set for a process with the web role. */
  url: string | null;
  child: ChildProcess;
  /** The id of the process's Postgres session (what its claims name), once its `started` line is read. */
  session(): string | null;
  stop(): Promise<void>;
}

export interface ServiceLog {
  file: string;
  warnings: number;
  errors: number;
  /** Warnings and errors by their message. */
  byMessage: Record<string, number>;
  stream: WriteStream;
}

const mainScript = path.join(__dirname, '..', '..', 'main.js');

export function openServiceLog(file: string): ServiceLog {
  return { file, warnings: 0, errors: 0, byMessage: {}, stream: createWriteStream(file) };
}

export async function startServiceProcess(roles: string, env: Record<string, string>, log: ServiceLog, timeoutMs = 180_000): Promise<ServiceProcess> {
  const hasWeb = /\b(web|all)\b/.test(roles);
  const port = hasWeb ? await freePort() : 0;
  const child = spawn(process.execPath, [mainScript, ...roles.split(/[\s,]+/).filter(Boolean)], {
    env: { ...process.env, LOG_LEVEL: 'info', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'loadtest-data-')), ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let session: string | null = null;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    let level = 0;
    let message = '';
    try {
      const parsed = JSON.parse(line) as { level?: number; msg?: string; session?: string };
      level = parsed.level ?? 0;
      message = parsed.msg ?? '';
      if (parsed.msg === 'started' && parsed.session) session = parsed.session;
    } catch {
      return;
    }
    if (level >= 50) log.errors += 1;
    else if (level >= 40) log.warnings += 1;
    if (level >= 40) {
      log.byMessage[message] = (log.byMessage[message] ?? 0) + 1;
      log.stream.write(`[${roles}] ${line}\n`);
    }
  });
  createInterface({ input: child.stderr! }).on('line', (line) => log.stream.write(`[${roles} stderr] ${line}\n`));
  const url = hasWeb ? `http://127.0.0.1:${port}` : null;
  // Logs are buffered, so "started" may sit in a buffer: a web process is up when /readyz says so;
  // a process without HTTP when it has stayed alive for a while (the schema is already there).
  const deadline = Date.now() + timeoutMs;
  const settledAt = Date.now() + 5000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`"${roles}" exited with ${child.exitCode} during start; see ${log.file}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`"${roles}" did not start within ${timeoutMs} ms`);
    }
    if (url ? await isReady(url) : Date.now() > settledAt) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    roles,
    url,
    child,
    session: () => session,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

async function isReady(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/readyz`)).status === 200;
  } catch {
    return false;
  }
}
