import { execFile } from 'node:child_process';
import path from 'node:path';
import { serviceEnv } from '../harness';

export interface ScriptRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a built operator script (`dist/scripts/<name>.js`) as a child process, the way `npm run`
 * does. Asynchronous: the test run's object store serves from this process, which must stay
 * responsive meanwhile.
 */
export function runScript(name: string, args: string[], env: Record<string, string> = {}): Promise<ScriptRun> {
  const script = path.join(__dirname, '..', '..', 'scripts', `${name}.js`);
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [script, ...args], { encoding: 'utf8', timeout: 90_000, env: { ...process.env, LOG_LEVEL: 'silent', ...env } },
      (_error, stdout, stderr) => resolve({ status: child.exitCode, stdout, stderr }));
  });
}

/**
 * The environment of a script on this run's database and storage that logs what it starts: on an
 * emptied database its infrastructure seeds the payment showcase and says so at `info`, so a test
 * sees where log lines go.
 */
export function loggingServiceEnv(): Record<string, string> {
  return serviceEnv({ LOG_LEVEL: 'info', SEED_DEMO_CATALOG: '1' });
}

/** The lines of a script's stderr split into the logger's JSON lines and the rest (progress, failure). */
export function stderrLines(stderr: string): { logs: Record<string, unknown>[]; other: string[] } {
  const logs: Record<string, unknown>[] = [];
  const other: string[] = [];
  for (const line of stderr.split('\n').filter(Boolean)) {
    const log = logLine(line);
    if (log) logs.push(log);
    else other.push(line);
  }
  return { logs, other };
}

function logLine(line: string): Record<string, unknown> | null {
  try {
    const parsed = JSON.parse(line) as Record<string, unknown> | null;
    return typeof parsed?.level === 'number' ? parsed : null;
  } catch {
    return null;
  }
}
