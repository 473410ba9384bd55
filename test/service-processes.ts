import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serviceEnv, services } from './harness';
import { eventually } from '../scripts/wait';

/**
 * Service processes for the tests that kill one: `node dist/main.js <roles>` on this run's database
 * and storage, each with a data directory of its own. `SERVICE_TEST_LOGS=info` shows their logs.
 */
export interface ServiceChild {
  process: ChildProcess;
  exited: Promise<number | null>;
}

const mainScript = path.join(__dirname, '..', 'main.js');

export function spawnService(roles: string[], overrides: Record<string, string>): ServiceChild {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'effects-service-'));
  chmodSync(dataDir, 0o755);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...serviceEnv(),
    DATA_DIR: dataDir,
    PORT: '0',
    LOG_LEVEL: process.env.SERVICE_TEST_LOGS ?? 'error',
    ...overrides,
  };
  const child = spawn(process.execPath, [mainScript, ...roles], { env, stdio: ['ignore', process.env.SERVICE_TEST_LOGS ? 'inherit' : 'ignore', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => {
    rmSync(dataDir, { recursive: true, force: true });
    resolve(code);
  }));
  return { process: child, exited };
}

/** Kills the process (SIGKILL unless told) and waits until it is gone. */
export async function kill(child: ServiceChild, signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
  if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill(signal);
  return child.exited;
}

/**
 * Other processes whose LISTEN connection is up, i.e. that finished starting their roles (their logs
 * are buffered, so readiness is read from the database). A process LISTENs on its channels one after
 * another, so pg_stat_activity shows only the last one it asked for: any LISTEN counts.
 */
export async function listeningProcesses(): Promise<number> {
  const { db, listenHub } = services();
  const { rows } = await db.raw<{ rows: { count: number }[] }>(
    `select count(*)::integer as count from pg_stat_activity
     where application_name = 'effects-backend-listen' and query like 'LISTEN %' and pid <> ?`,
    [listenHub.backendPid() ?? 0],
  );
  return rows[0].count;
}

/**
 * `process_is_alive` counts every process as alive for 15 s after Postgres started (sessions are
 * still coming back then): a test that needs a dead process noticed waits for that to pass.
 */
export function untilDeadProcessesShow(): Promise<boolean> {
  return eventually(async () => (await services().db.raw("select pg_postmaster_start_time() < now() - interval '15 seconds' as settled")).rows[0].settled as boolean, Boolean, 20_000);
}

/** Waits until `count` other processes listen. */
export function untilListening(count: number, timeoutMs = 60_000): Promise<number> {
  return eventually(listeningProcesses, (listening) => listening >= count, timeoutMs);
}
