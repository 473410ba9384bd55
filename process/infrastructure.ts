import { createHmac } from 'node:crypto';
import path from 'node:path';
import { catalogIsEmpty } from '../db/catalog/catalog-is-empty';
import { communityCategoryId } from '../db/user-effects/catalog-effect';
import type { Config } from '../config';
import { startBoss } from '../db/boss';
import { createKnex, migrateToLatest } from '../db/knex';
import { ListenHub } from '../db/listen-hub';
import { paymentProcessorOf } from '../services/payments/payment-processor';
import { Circuits } from '../common/circuit';
import { seedPaymentShowcase } from '../db/payments/seed-showcase';
import { ProcessSession } from '../db/process-session';
import { startPostgres } from '../db/postgres';
import { seedSubscriptionPlans } from '../db/subscriptions/seed-plans';
import { seedStudioCategories } from '../db/studio/seed-studio-categories';
import type { Logger } from '../common/logger';
import { Storage, type StorageSettings } from '../media/storage';
import type { Services } from '../services';

export interface Infrastructure {
  services: Services;
  /** Where the database and the object store are (for processes started beside this one). */
  databaseUrl: string;
  storageSettings: StorageSettings;
  /**
   * The embedded default: nothing configured, and this process started the embedded Postgres (it
   * is the only process). Simulators run only then (main.ts).
   */
  embeddedDefault: boolean;
  stop(): Promise<void>;
}

/** Runs every stop in order (they were pushed to the front, so the last started goes first), logging failures. */
function stopAll(stops: (() => Promise<void>)[], log: Logger): () => Promise<void> {
  return async () => {
    for (const stop of stops) await stop().catch((error) => log.error({ err: error }, 'error while stopping'));
  };
}

/** Postgres migrated to the latest schema and object storage with its bucket, configured or embedded. */
async function startStores(config: Config, log: Logger, stops: (() => Promise<void>)[]) {
  const postgres = await startPostgres(config, log);
  stops.unshift(() => postgres.stop());

  const db = createKnex(postgres.url, config.databasePoolSize, log);
  stops.unshift(() => db.destroy());
  const applied = await migrateToLatest(db);
  if (applied.length) log.info({ migrations: applied }, 'migrations applied');

  let storageSettings: StorageSettings;
  if (config.s3) {
    storageSettings = { ...config.s3, publicUrl: config.s3PublicUrl ?? config.s3.endpoint };
  } else {
    const { startEmbeddedS3 } = await import('../media/embedded-s3.js');
    const embedded = await startEmbeddedS3({
      directory: path.join(config.dataDir, 's3'),
      host: config.host,
      port: config.embeddedS3Port,
      bucket: 'media',
      // Derived, not generated: every process on this data directory signs alike, and links stay valid across restarts.
      secretKey: createHmac('sha256', config.tokenSecret).update('embedded object store').digest('base64url'),
      // The web role serves the store's paths on its own origin (api/store-mount.ts): one address for everything.
      publicUrl: config.s3PublicUrl ?? new URL(config.publicBaseUrl).origin,
      requestTimeoutMs: config.requestTimeoutMs,
    });
    stops.unshift(() => embedded.stop());
    storageSettings = embedded.settings;
    log.warn({ endpoint: embedded.settings.endpoint, publicUrl: embedded.settings.publicUrl },
      'EMBEDDED OBJECT STORE (s3rver behind a gateway that checks signatures, presigned links\' expiry and upload policies as S3 does): '
      + 'one local directory, no redundancy, no encryption. Development only: set S3_ENDPOINT and the other S3_* variables anywhere else.');
  }
  const storage = new Storage(storageSettings, config.tokenSecret);
  await storage.ensureBucket();
  return { postgres, db, storage, storageSettings };
}

/**
 * The `infra` process type: only the database (migrated) and the object store, embedded unless
 * configured, so that separate `web`, `worker`, `media` and `scheduler` processes on one machine
 * share a `DATABASE_URL` and an S3 that outlive any one of them.
 */
export async function startStoresOnly(config: Config, log: Logger): Promise<{ databaseUrl: string; storageSettings: StorageSettings; stop(): Promise<void> }> {
  const stops: (() => Promise<void>)[] = [];
  try {
    const { postgres, storageSettings } = await startStores(config, log, stops);
    return { databaseUrl: postgres.url, storageSettings, stop: stopAll(stops, log) };
  } catch (error) {
    await stopAll(stops, log)();
    throw error;
  }
}

/**
 * Brings up what every process role stands on, configured or embedded: Postgres (migrated to the
 * latest schema; knex's migration lock makes concurrent starts safe), the process's own session
 * (`db/process-session.ts`), object storage with its bucket, pg-boss on the same database, and the
 * process's LISTEN hub. `stop` takes them down in reverse order.
 */
export async function startInfrastructure(config: Config, log: Logger, options: { supervise: boolean; schedule: boolean }): Promise<Infrastructure> {
  const stops: (() => Promise<void>)[] = [];
  try {
    const { postgres, db, storage, storageSettings } = await startStores(config, log, stops);
    const processSession = await ProcessSession.start({ connectionString: postgres.url }, log);
    stops.unshift(() => processSession.stop());
    if (config.catalog.seedDemo) {
      // Loaded only to seed: a role starting beside a catalog never loads the importer and the web
      // code it stands on (about a tenth of a role process's start).
      if (await catalogIsEmpty(db)) {
        const { seedDemoCatalogIfEmpty } = await import('../services/catalog/demo-catalog.js');
        await seedDemoCatalogIfEmpty(db, storage, log);
      }
      // After the demo catalog, so `community` comes last (a first approval makes it otherwise).
      await communityCategoryId(db);
    }
    if (config.payments.seedShowcase && (await seedPaymentShowcase(db))) log.info('demo payment showcase seeded');
    if (config.payments.seedShowcase && (await seedSubscriptionPlans(db))) log.info('demo subscription plans seeded');
    if (config.catalog.seedDemo && (await seedStudioCategories(db, { onlyIntoEmpty: true }))) log.info('demo studio categories seeded');

    const boss = await startBoss(postgres.url, options, log);
    boss.on('error', (error) => log.error({ err: error }, 'pg-boss error'));
    stops.unshift(() => boss.stop({ graceful: true, timeout: Math.max(1000, config.shutdownTimeoutMs - 5000) }));

    const listenHub = new ListenHub({ connection: { connectionString: postgres.url }, log });
    stops.unshift(() => listenHub.stop());

    return {
      services: {
        config, log, db, boss, listenHub, processSession, storage,
        paymentProcessor: paymentProcessorOf(config, db, log),
        circuits: new Circuits({ settings: config.circuits, log }),
      },
      databaseUrl: postgres.url,
      storageSettings,
      embeddedDefault: postgres.startedHere && !config.s3,
      stop: stopAll(stops, log),
    };
  } catch (error) {
    await stopAll(stops, log)();
    throw error;
  }
}
