import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import type { Realtime } from '../api/realtime/streams';
import { startWeb, type WebOptions } from '../api/web';
import { loadConfig, type Config } from '../config';
import { createPaymentProcessor } from '../db/payments/processor/create-payment-processor';
import { notify } from '../db/channels';
import { freeLoopbackPort } from '../db/postgres';
import { startInfrastructure, type Infrastructure } from '../infrastructure';
import { createLogger, type Logger } from '../logger';
import type { Services } from '../services';
import type { ProcessorSimulator } from '../simulators/payment-processor/simulator';
import { client, type Api } from './client';

/**
 * The test harness: one real Postgres (embedded in a temporary directory, or a fresh database on
 * `TEST_DATABASE_URL`) and one real S3-compatible server per test run, shared by every test file.
 * Tests isolate themselves with `resetDatabase()` and by talking HTTP to apps on random ports.
 */

let scratch: string | null = null;
let infrastructure: Infrastructure | null = null;
let dropTestDatabase: (() => Promise<void>) | null = null;

/** A free loopback port for a server of a test. */
export const freePort = freeLoopbackPort;

/** A fresh database per run on the server of `TEST_DATABASE_URL`, dropped at the end. */
async function createTestDatabase(external: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const database = `test_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: external });
  await admin.connect();
  await admin.query(`create database "${database}"`);
  await admin.end();
  const url = new URL(external);
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: external });
      await client.connect();
      await client.query(`drop database if exists "${database}" with (force)`);
      await client.end();
    },
  };
}

/** A config for tests: everything embedded, secrets fixed, overrides on top. */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: path.join(scratch ?? os.tmpdir(), 'data'),
    TOKEN_SECRET: 'test-token-secret-that-is-long-enough-0123456789',
    PORT: '0',
    LOG_LEVEL: 'silent',
    ...overrides,
  });
}

export function silentLogger(): Logger {
  return createLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
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
 * The infrastructure every role stands on (`infrastructure.ts`), once for the whole run: an embedded
 * Postgres in a temporary directory (or a fresh database on `TEST_DATABASE_URL`), an embedded object
 * store, pg-boss and the LISTEN hub; nothing seeded.
 */
export async function startSharedInfrastructure(): Promise<Services> {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'effects-test-'));
  // As root, embedded Postgres runs as its own OS user, which must be able to reach its directory.
  chmodSync(scratch, 0o755);
  const external = process.env.TEST_DATABASE_URL ? await createTestDatabase(process.env.TEST_DATABASE_URL) : null;
  dropTestDatabase = external?.drop ?? null;
  // The store's links point at its own gateway: the test apps come and go on ports of their own.
  const storePort = await freePort();
  const config = testConfig({
    SEED_DEMO_CATALOG: '0',
    DATABASE_POOL_SIZE: '20',
    HOST: '127.0.0.1',
    EMBEDDED_S3_PORT: String(storePort),
    S3_PUBLIC_URL: `http://127.0.0.1:${storePort}`,
    ...(external ? { DATABASE_URL: external.url } : { EMBEDDED_PG_PORT: String(await freePort()) }),
  });
  infrastructure = await startInfrastructure(config, silentLogger(), { supervise: false, schedule: false });
  return infrastructure.services;
}

export async function stopSharedInfrastructure(): Promise<void> {
  await infrastructure?.stop();
  await dropTestDatabase?.();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}

/** The services of this test run (database, queue, storage), with the test config. */
export function services(): Services {
  if (!infrastructure) throw new Error('test infrastructure is not started: run mocha with --require dist/test/setup.js');
  return infrastructure.services;
}

export function databaseUrl(): string {
  return infrastructure!.databaseUrl;
}

/**
 * The environment of a service process (`node dist/main.js <roles>`, a script) on this run's
 * database and storage, with a fixed token secret, no demo seeding and payments off; `overrides` on top.
 */
export function serviceEnv(overrides: Record<string, string> = {}): Record<string, string> {
  const storage = infrastructure!.storageSettings;
  return {
    DATABASE_URL: infrastructure!.databaseUrl,
    S3_ENDPOINT: storage.endpoint,
    S3_ACCESS_KEY: storage.accessKey,
    S3_SECRET_KEY: storage.secretKey,
    S3_BUCKET: storage.bucket,
    S3_REGION: storage.region,
    S3_PUBLIC_URL: storage.publicUrl,
    HOST: '127.0.0.1',
    TOKEN_SECRET: 'service-token-secret-that-is-long-enough-0123456789',
    SEED_DEMO_CATALOG: '0',
    // Processes on a configured database run no payment simulator (main.ts): set a processor to test payments.
    PAYMENTS_ENABLED: '0',
    ...overrides,
  };
}

/**
 * Empties every table of the service (not the migrations' bookkeeping) and pg-boss's jobs. A
 * previous test's background work (a processor notification still being applied) may lock rows in
 * another order than the truncate takes its tables: Postgres then breaks the deadlock, and the
 * truncate is tried again.
 */
export async function resetDatabase(): Promise<void> {
  const { db } = services();
  const { rows } = await db.raw<{ rows: { tablename: string }[] }>(
    "select tablename from pg_tables where schemaname = 'public' and tablename not like 'knex_migrations%'",
  );
  const truncate = `truncate ${rows.map((row) => `"${row.tablename}"`).join(', ')} restart identity cascade`;
  for (let attempt = 1; rows.length; attempt += 1) {
    try {
      await db.raw(truncate);
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== '40P01' || attempt === 3) throw error;
    }
  }
  await db.raw('delete from pgboss.job');
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
  close(): Promise<void>;
}

export interface TestAppOptions extends WebOptions {
  /** Configuration on top of the test defaults; the port is a free one unless `PORT` is given. */
  config?: Record<string, string>;
  log?: Logger;
}

/**
 * The web role (`startWeb`, mounts included) on a free loopback port, over the shared
 * infrastructure, with its own configuration (and the payment processor client built from it).
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const base = services();
  const config = testConfig({ PORT: String(await freePort()), ...options.config });
  const appServices: Services = { ...base, config, log: options.log ?? base.log, paymentProcessor: createPaymentProcessor(config) };
  const web = await startWeb(appServices, options);
  return {
    url: web.url,
    h2cUrl: web.h2cUrl,
    services: appServices,
    realtime: web.realtime,
    processorSimulator: web.processorSimulator,
    catalogSettled: () => web.catalogCache.settled((payload) => base.db.transaction((trx) => notify(trx, 'catalog_changed', payload))),
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
