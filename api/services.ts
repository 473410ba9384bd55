import type { Knex } from 'knex';
import type PgBoss from 'pg-boss';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Storage } from '../media/storage';

/** What request handlers and jobs reach: built once per process by `main.ts`, passed down explicitly. */
export interface Services {
  config: Config;
  log: Logger;
  db: Knex;
  boss: PgBoss;
  storage: Storage;
}
