import '../process/runtime-check';
import { loadEnvFileIfPresent } from '../process/env-file';
import { loadConfig } from '../config';
import { createScriptLogger } from '../common/logger';
import { createKnex, migrateToLatest } from '../db/knex';
import { startPostgres } from '../db/postgres';
import { runOperatorScript } from './operator';

/** `npm run migrate`: brings the database (configured or embedded) to the latest schema. */
async function main(): Promise<void> {
  loadEnvFileIfPresent();
  const config = loadConfig();
  const log = createScriptLogger(config.logLevel);
  const postgres = await startPostgres(config, log);
  const db = createKnex(postgres.url, 2);
  try {
    const applied = await migrateToLatest(db);
    console.log(applied.length ? `applied: ${applied.join(', ')}` : 'already up to date');
  } finally {
    await db.destroy();
    await postgres.stop();
  }
}

runOperatorScript('migrate', main);
