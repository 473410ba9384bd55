import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createLogger } from '../common/logger';
import { loadConfig, type Config } from '../config';
import { freeLoopbackPort } from '../db/postgres';
import type { StorageSettings } from '../media/storage';
import type { Services } from '../services';
import { startInfrastructure } from './infrastructure';

/**
 * A whole stack in a scratch directory, gone when it stops: an embedded Postgres (or a fresh
 * database on the server of `TEST_DATABASE_URL`) and an embedded object store, started as every
 * role's infrastructure is, nothing seeded. The test suite runs on one; so do the benchmarks, the
 * load test and the fault suite, which start the service's processes on it (`serviceEnv`).
 */
export interface ScratchStack {
  services: Services;
  databaseUrl: string;
  storageSettings: StorageSettings;
  /** A configuration on this stack's data directory, with a fixed token secret and `overrides` on top. */
  config(overrides?: Record<string, string>): Config;
  /**
   * The environment of a service process (`node dist/main.js <roles>`, a script) on this stack's
   * database and storage, with a fixed token secret, no demo seeding and payments off; `overrides` on top.
   */
  serviceEnv(overrides?: Record<string, string>): Record<string, string>;
  /** Empties every table of the service (not the migrations' bookkeeping) and every queue's jobs (through pg-boss). */
  resetDatabase(): Promise<void>;
  stop(): Promise<void>;
}

const tokenSecret = 'test-token-secret-that-is-long-enough-0123456789';

/** A configuration for a scratch stack's processes: data under `dataDir`, a fixed token secret, `overrides` on top. */
export function scratchConfig(dataDir: string, overrides: Record<string, string> = {}): Config {
  return loadConfig({ DATA_DIR: dataDir, TOKEN_SECRET: tokenSecret, PORT: '0', LOG_LEVEL: 'silent', ...overrides });
}

/** A fresh database on the server of `external`, dropped by the answer's `drop`. */
async function createDatabase(external: string): Promise<{ url: string; drop: () => Promise<void> }> {
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

export async function startScratchStack(options: { externalDatabaseUrl?: string; logLevel?: string } = {}): Promise<ScratchStack> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'effects-scratch-'));
  // As root, embedded Postgres runs as its own OS user, which must be able to reach its directory.
  chmodSync(scratch, 0o755);
  const config = (overrides: Record<string, string> = {}) => scratchConfig(path.join(scratch, 'data'), overrides);
  const external = options.externalDatabaseUrl ? await createDatabase(options.externalDatabaseUrl) : null;
  // The store's links point at its own gateway: the web processes on the stack come and go on ports of their own.
  const storePort = await freeLoopbackPort();
  const infrastructure = await startInfrastructure(
    config({
      SEED_DEMO_CATALOG: '0',
      DATABASE_POOL_SIZE: '20',
      HOST: '127.0.0.1',
      EMBEDDED_S3_PORT: String(storePort),
      S3_PUBLIC_URL: `http://127.0.0.1:${storePort}`,
      ...(external ? { DATABASE_URL: external.url } : { EMBEDDED_PG_PORT: String(await freeLoopbackPort()) }),
    }),
    createLogger(options.logLevel ?? 'silent'),
    { supervise: false, schedule: false },
  );
  const { services, databaseUrl, storageSettings } = infrastructure;
  return {
    services,
    databaseUrl,
    storageSettings,
    config,
    serviceEnv: (overrides = {}) => ({
      DATABASE_URL: databaseUrl,
      S3_ENDPOINT: storageSettings.endpoint,
      S3_ACCESS_KEY: storageSettings.accessKey,
      S3_SECRET_KEY: storageSettings.secretKey,
      S3_BUCKET: storageSettings.bucket,
      S3_REGION: storageSettings.region,
      S3_PUBLIC_URL: storageSettings.publicUrl,
      HOST: '127.0.0.1',
      TOKEN_SECRET: 'service-token-secret-that-is-long-enough-0123456789',
      SEED_DEMO_CATALOG: '0',
      // A developer's .env is for their own `npm start`, not for the processes of a test or a benchmark.
      ENV_FILE: 'off',
      // Processes on a configured database run no payment simulator (main.ts): set a processor to test payments.
      PAYMENTS_ENABLED: '0',
      ...overrides,
    }),
    resetDatabase: () => resetDatabase(services),
    stop: async () => {
      await infrastructure.stop();
      await external?.drop();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/**
 * Truncates every table, then deletes every queue's jobs. A previous test's background work (a
 * processor notification still being applied) may lock rows in another order than the truncate
 * takes its tables: Postgres then breaks the deadlock, and the truncate is tried again.
 */
async function resetDatabase({ db, boss }: Services): Promise<void> {
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
  for (const queue of await boss.getQueues()) await boss.deleteAllJobs(queue.name);
}
