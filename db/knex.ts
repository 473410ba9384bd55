import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { Logger } from '../common/logger';
import { preparesStatements } from './prepared-statements';

// bigint counts (count(*)) arrive as strings by default; every integer we store fits in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/** Knex on `url`; with `log`, what knex itself reports (a connection lost, a failed acquire) goes there instead of the console. */
export function createKnex(url: string, poolSize: number, log?: Logger): Knex {
  const report = (message: unknown) => log?.warn({ knex: String(message) }, 'knex');
  return knex({
    client: 'pg',
    connection: { connectionString: url, application_name: 'effects-backend' },
    pool: {
      min: 0,
      max: poolSize,
      afterCreate: (connection: pg.Client, done: (error: Error | null, connection: pg.Client) => void) => {
        preparesStatements(connection);
        done(null, connection);
      },
    },
    migrations: migrationSettings,
    ...(log ? { log: { warn: report, error: report, deprecate: report, debug: () => undefined } } : {}),
  });
}

/** Compiled migrations live beside this file's compiled copy: dist/migrations/*.js. */
const migrationSettings: Knex.MigratorConfig = {
  directory: path.join(__dirname, '..', 'migrations'),
  loadExtensions: ['.js'],
  tableName: 'knex_migrations',
};

export async function migrateToLatest(db: Knex): Promise<string[]> {
  const [, applied] = await db.migrate.latest(migrationSettings);
  return applied as string[];
}

export async function pendingMigrations(db: Knex): Promise<number> {
  const [, pending] = await db.migrate.list(migrationSettings);
  return (pending as unknown[]).length;
}

/** The connection string a knex instance of `createKnex` was made with (for a tool with its own pool). */
export function databaseUrlOf(db: Knex): string {
  return (db.client.config.connection as { connectionString: string }).connectionString;
}
