import { ConfigError, loadConfig } from './config';
import { createLogger, flushLogs } from './logger';
import { startInfrastructure } from './infrastructure';
import { startWeb } from './api/web';
import type { RunningPart } from './api/services';
import { startWorker } from './workers/worker';
import { startMedia } from './workers/media';
import { startScheduler } from './workers/scheduler';

/**
 * One entry for every process type of the Procfile: `node dist/main.js <role...>`.
 * `web` serves the API; `worker`, `media` and `scheduler` run jobs; `all` (what `npm start` runs)
 * starts every role in one process on the embedded defaults.
 */
const roleNames = ['web', 'worker', 'media', 'scheduler'] as const;
type RoleName = (typeof roleNames)[number];

const forceExitAfterMs = 25_000;

function parseRoles(argv: string[]): RoleName[] {
  const asked = argv.length ? argv : ['all'];
  const roles = new Set<RoleName>();
  for (const name of asked) {
    if (name === 'all') roleNames.forEach((role) => roles.add(role));
    else if ((roleNames as readonly string[]).includes(name)) roles.add(name as RoleName);
    else throw new ConfigError(`unknown role "${name}"; expected one of: all, ${roleNames.join(', ')}`);
  }
  return [...roles];
}

async function main(): Promise<void> {
  const config = loadConfig();
  const roles = parseRoles(process.argv.slice(2));
  const log = createLogger(config.logLevel);
  const jobRoles = roles.some((role) => role !== 'web');
  const infrastructure = await startInfrastructure(config, log, { supervise: jobRoles, schedule: roles.includes('scheduler') });
  const { services } = infrastructure;
  const running: RunningPart[] = [];
  if (roles.includes('worker')) running.push(await startWorker(services));
  if (roles.includes('media')) running.push(await startMedia(services));
  if (roles.includes('scheduler')) running.push(await startScheduler(services));
  if (roles.includes('web')) running.push(await startWeb(services));
  log.info({ roles }, 'started');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    setTimeout(() => {
      log.error('shutdown took too long; exiting');
      process.exit(1);
    }, forceExitAfterMs).unref();
    // The web server first (stop taking requests), then the job roles, then the infrastructure.
    for (const role of [...running].reverse()) await role.stop();
    await infrastructure.stop();
    log.info('stopped');
    await flushLogs(log);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((error) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
