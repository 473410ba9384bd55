import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { CatalogCache } from '../api/catalog/catalog-cache';
import type { Realtime } from '../api/realtime/streams';
import { startWeb, type WebOptions } from '../api/web';
import type { Config } from '../config';
import { paymentProcessorOf } from '../services/payments/payment-processor';
import { Circuit, Circuits, memoryCircuitStore, type CircuitOptions } from '../common/circuit';
import { notify } from '../db/channels';
import { freeLoopbackPort } from '../db/postgres';
import { scratchConfig, startScratchStack, type ScratchStack } from '../process/scratch-stack';
import { createLogger, type Logger } from '../common/logger';
import type { Services } from '../services';
import type { ProcessorSimulator } from '../simulators/payment-processor/simulator';
import { client, type Api } from './client';
import { kindConfig, namesAccounts } from './provider-kind';

/**
 * The test harness: one real Postgres (embedded in a temporary directory, or a fresh database on
 * `TEST_DATABASE_URL`) and one real S3-compatible server per test run, shared by every test file.
 * Tests isolate themselves with `resetDatabase()` and by talking HTTP to apps on random ports.
 */

let stack: ScratchStack | null = null;

/** A free loopback port for a server of a test. */
export const freePort = freeLoopbackPort;

/** A config for tests: everything embedded, secrets fixed, overrides on top. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const env = { ...kindDefaults(overrides), ...overrides };
  return stack ? stack.config(env) : scratchConfig(path.join(os.tmpdir(), 'effects-test-data'), env);
}

/** The test kind's configuration (`provider-kind.ts`), without its accounts when the test names its own. */
function kindDefaults(overrides: Record<string, string>): Record<string, string> {
  const defaults = kindConfig();
  if (!namesAccounts(overrides)) return defaults;
  return Object.fromEntries(Object.entries(defaults).filter(([variable]) => !namesAccounts({ [variable]: '' })));
}

export function silentLogger(): Logger {
  return createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
}

/**
 * A circuit of its own in memory, with the default settings unless told otherwise, for a client a
 * test builds by hand (`common/circuit.ts`).
 */
export function memoryCircuit(options: Partial<CircuitOptions> = {}): Circuit {
  return new Circuit({
    name: 'test service',
    settings: { failures: 5, pause: { baseMs: 5000, capMs: 60_000 } },
    probeTimeoutMs: 10_000,
    store: memoryCircuitStore(),
    log: silentLogger(),
    ...options,
  });
}

/** A logger whose JSON lines are kept, for tests that check what was logged. */
export function capturingLogger(): { log: Logger; lines: () => Record<string, unknown>[] } {
  const captured: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      captured.push(String(chunk));
      done();
    },
  });
  return { log: createLogger('info', sink), lines: () => captured.flatMap((text) => text.split('\n').filter(Boolean).map((line) => JSON.parse(line))) };
}

/**
 * The infrastructure every role stands on, once for the whole run (`process/scratch-stack.ts`): an
 * embedded Postgres in a temporary directory (or a fresh database on `TEST_DATABASE_URL`), an
 * embedded object store, pg-boss and the LISTEN hub; nothing seeded.
 */
export async function startSharedInfrastructure(): Promise<Services> {
  stack = await startScratchStack({ externalDatabaseUrl: process.env.TEST_DATABASE_URL, logLevel: process.env.TEST_LOG_LEVEL });
  return stack.services;
}

export async function stopSharedInfrastructure(): Promise<void> {
  await stack?.stop();
  stack = null;
}

/** The services of this test run (database, queue, storage), with the test config. */
export function services(): Services {
  if (!stack) throw new Error('test infrastructure is not started: run mocha with --require dist/test/setup.js');
  return stack.services;
}

export function databaseUrl(): string {
  return stack!.databaseUrl;
}

/** The environment of a service process on this run's database and storage (`ScratchStack.serviceEnv`). */
export function serviceEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return stack!.serviceEnv(overrides);
}

/** Empties every table of the service and every queue's jobs, between tests. */
export function resetDatabase(): Promise<void> {
  return stack!.resetDatabase();
}

export interface TestApp {
  url: string;
  services: Services;
  /** The HTTP/2 cleartext listener's URL when `H2C_PORT` is configured, or null. */
  h2cUrl: string | null;
  /** This app's stream mechanism: one web process's open streams. */
  realtime: Realtime;
  /** The payment processor simulator the web role mounted (no processor is configured in tests). */
  processorSimulator: ProcessorSimulator | null;
  /** Resolves once every catalog change committed so far has reached this app's catalog cache. */
  catalogSettled(): Promise<void>;
  /** This app's catalog cache (one web process's). */
  catalogCache: CatalogCache;
  close(): Promise<void>;
}

export interface TestAppOptions extends WebOptions {
  /** Configuration on top of the test defaults; the port is a free one unless `PORT` is given. */
  config?: Record<string, string>;
  /** Changes to the loaded configuration that no variable makes (say, provider accounts of another kind). */
  adjustConfig?: (config: Config) => Config;
  log?: Logger;
}

/**
 * The web role (`startWeb`, mounts included) on a free loopback port, over the shared
 * infrastructure, with its own configuration (and the payment processor client built from it).
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const base = services();
  const loaded = testConfig({ PORT: String(await freePort()), ...options.config });
  const config = options.adjustConfig ? options.adjustConfig(loaded) : loaded;
  const log = options.log ?? base.log;
  // Its own circuits, like a process of its own: what one test app's outside services did never reaches another's.
  const appServices: Services = { ...base, config, log, paymentProcessor: paymentProcessorOf(config, base.db, log), circuits: new Circuits({ settings: config.circuits, log }) };
  // A test app's clients are done when it closes: its drain need not wait long for a next request.
  const web = await startWeb(appServices, { drainQuietMs: 100, ...options });
  return {
    url: web.url,
    h2cUrl: web.h2cUrl,
    services: appServices,
    realtime: web.realtime,
    processorSimulator: web.processorSimulator,
    catalogSettled: () => web.catalogCache.settled((payload) => base.db.transaction((trx) => notify(trx, 'catalog_changed', payload))),
    catalogCache: web.catalogCache,
    close: () => web.stop(),
  };
}

const catalogPaths = /^\/v1\/(effects|categories|tags|authors)(\/|\?|$)/;

/**
 * A client for `app` whose catalog reads first wait for the app's catalog cache to hear of every
 * change committed before them: tests change the catalog in SQL and read it at once, where a phone
 * reads it a fraction of a second later (`test/api/catalog/catalog-cache.test.ts` proves that bound).
 */
export function appClient(app: TestApp): Api {
  return client(app.url, { beforeRequest: (method, path) => (method === 'GET' && catalogPaths.test(path) ? app.catalogSettled() : undefined) });
}

/**
 * The hooks most API test files share: one app for the whole file and a client for it, closed
 * after the file. Read `app` and `api` inside tests and hooks (they exist from the first `before`).
 */
export function useTestApp(options: TestAppOptions | (() => TestAppOptions) = {}): { app: TestApp; api: Api } {
  const handle = {} as { app: TestApp; api: Api };
  before(async () => {
    handle.app = await startTestApp(typeof options === 'function' ? options() : options);
    handle.api = appClient(handle.app);
  });
  after(() => handle.app.close());
  return handle;
}
