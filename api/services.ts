import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Storage } from '../media/storage';
import type { PaymentProcessor } from './payments/processor/payment-processor';

/** What request handlers and jobs reach: built once per process by `main.ts`, passed down explicitly. */
export interface Services {
  config: Config;
  log: Logger;
  db: Knex;
  boss: PgBoss;
  storage: Storage;
  /** The payment processor (the real one or the simulator over HTTP); built from config when absent. */
  paymentProcessor: PaymentProcessor;
}

/** Something a process role started and must stop at shutdown (a server, a job loop, a listener). */
export interface RunningPart {
  stop(): Promise<void>;
}

/** Stops parts in reverse start order, so later parts (which may use earlier ones) go first. */
export function stopAll(parts: RunningPart[]): RunningPart {
  return { stop: async () => { for (const part of [...parts].reverse()) await part.stop(); } };
}
