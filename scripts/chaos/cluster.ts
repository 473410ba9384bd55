import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { createKnex } from '../../db/knex';
import { startEmbeddedPostgres, type Postgres } from '../../db/postgres';
import { createLogger } from '../../common/logger';
import { startEmbeddedS3, type EmbeddedS3 } from '../../media/embedded-s3';
import { freeLoopbackPort as freePort } from '../../db/postgres';
import { openServiceLog, startServiceProcess, type ServiceLog, type ServiceProcess } from '../loadtest/service';
import type { ProviderKind } from '../../common/model-route';
import { simulatedAccounts, simulatedApiEnv } from '../../simulators/providers/simulated-kinds';
import { startProviderLink, type ProviderLink } from './provider-link';

/**
 * The cluster under fault: a Postgres of its own that the suite can stop and start again (an
 * external-mode database for every process), an S3-compatible store, the `sim-provider` role as the
 * shared provider (reached through a link the suite can cut, `provider-link.ts`) with the service's
 * accounts of one provider kind (the simulator speaking that kind's protocol), and every service
 * role as a process of its own.
 */
export interface Cluster {
  databaseUrl: string;
  /** The suite's own connection, for its checks (it rides out the restart like every process). */
  db: Knex;
  env: Record<string, string>;
  provider: ServiceProcess & { url: string };
  /** The network between the service's processes and the provider, which the suite can cut. */
  providerLink: ProviderLink;
  processes: ServiceProcess[];
  log: ServiceLog;
  /** Starts `roles` as one more process. */
  start(roles: string, extraEnv?: Record<string, string>): Promise<ServiceProcess>;
  /** Stops Postgres (fast shutdown: every session is ended), waits `downMs`, starts it again. */
  restartPostgres(downMs: number): Promise<{ stoppedAt: number; backAt: number }>;
  stop(): Promise<void>;
}

export interface ClusterSettings {
  /** The kind of every provider account of the service. */
  kind: ProviderKind;
  /** PENDING_TIMEOUT_S of the service; null: its default. */
  pendingTimeoutS: number | null;
  accounts: number;
  slots: number;
  latencyMs: number;
  failureRate: number;
  outDir: string;
}

export async function startCluster(settings: ClusterSettings): Promise<Cluster> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'chaos-'));
  // As root, embedded Postgres runs as its own OS user, which must be able to reach its directory.
  chmodSync(scratch, 0o755);
  const quiet = createLogger('silent');
  const postgresPort = await freePort();
  const postgresSettings = { directory: path.join(scratch, 'postgres'), port: postgresPort, database: 'chaos', log: quiet };
  let postgres: Postgres | null = await startEmbeddedPostgres(postgresSettings);
  const s3: EmbeddedS3 = await startEmbeddedS3({
    directory: path.join(scratch, 's3'), host: '127.0.0.1', port: 0, bucket: 'media', secretKey: randomBytes(32).toString('base64url'), publicUrl: null, requestTimeoutMs: 60_000,
  });
  const log = openServiceLog(path.join(settings.outDir, 'chaos-services.log'));
  const processes: ServiceProcess[] = [];

  const providerPort = await freePort();
  const providerLink = await startProviderLink({ host: '127.0.0.1', port: providerPort });
  const accounts = simulatedAccounts(settings.kind, Array.from({ length: settings.accounts }, (_, index) => `chaos-account-${index + 1}`), settings.slots);
  const env: Record<string, string> = {
    DATABASE_URL: postgres.url,
    S3_ENDPOINT: s3.settings.endpoint,
    S3_ACCESS_KEY: s3.settings.accessKey,
    S3_SECRET_KEY: s3.settings.secretKey,
    S3_BUCKET: s3.settings.bucket,
    S3_REGION: s3.settings.region,
    TOKEN_SECRET: 'chaos-token-secret-that-is-long-enough-0123456789',
    PAYMENT_NOTIFICATION_SECRET: 'chaos-notification-secret-long-enough-0123456789',
    PROVIDER_URL: providerLink.url,
    ...simulatedApiEnv(settings.kind, providerLink.url),
    ...accounts.env,
    ...(settings.pendingTimeoutS === null ? {} : { PENDING_TIMEOUT_S: String(settings.pendingTimeoutS) }),
    // Every simulated user comes from one address: the per-source and per-user budgets are not under test.
    RATE_AUTH_BURST: '1000000',
    RATE_WRITE_BURST: '1000000',
    RATE_READ_BURST: '1000000',
    SEED_DEMO_CATALOG: '0',
    // Payments are not under test, and a web process beside a configured database needs a real processor.
    PAYMENTS_ENABLED: '0',
  };
  const start = async (roles: string, extraEnv: Record<string, string> = {}) => {
    const started = await startServiceProcess(roles, { ...env, ...extraEnv }, log);
    processes.push(started);
    // The provider calls the web role back: the processes started after it name it in their
    // callback links (by default a worker names its own listener, where nothing answers).
    if (started.url !== null && env.PROVIDER_CALLBACK_BASE_URL === undefined) env.PROVIDER_CALLBACK_BASE_URL = started.url;
    return started;
  };
  const provider = await start('sim-provider', {
    SIM_PROVIDER_PORT: String(providerPort),
    SIM_PROVIDER_LATENCY_MS: String(settings.latencyMs),
    SIM_PROVIDER_FAILURE_RATE: String(settings.failureRate),
    SIM_PROVIDER_CONCURRENCY: String(settings.slots),
  });
  const db = createKnex(postgres.url, 4, quiet);

  return {
    databaseUrl: postgres.url,
    db,
    env,
    provider: Object.assign(provider, { url: `http://127.0.0.1:${providerPort}` }),
    providerLink,
    processes,
    log,
    start,
    restartPostgres: async (downMs) => {
      const stoppedAt = Date.now();
      await postgres?.stop();
      postgres = null;
      await new Promise((resolve) => setTimeout(resolve, downMs));
      postgres = await startEmbeddedPostgres(postgresSettings);
      return { stoppedAt, backAt: Date.now() };
    },
    stop: async () => {
      for (const service of [...processes].reverse()) {
        if (service.child.signalCode === 'SIGSTOP') service.child.kill('SIGCONT');
        await service.stop();
      }
      await db.destroy();
      await providerLink.close();
      await s3.stop();
      await postgres?.stop();
      log.stream.end();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
