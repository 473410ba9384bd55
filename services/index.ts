import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { Config } from '../config';
import type { ListenHub } from '../db/listen-hub';
import type { PaymentProcessor } from '../clients/payment-processor/payment-processor';
import type { Circuits } from '../common/circuit';
import type { ProcessSession } from '../db/process-session';
import type { Logger } from '../common/logger';
import type { Storage } from '../media/storage';

/**
 * What request handlers and jobs reach: built once per process by `infrastructure.ts`, passed down
 * explicitly to every role.
 */
export interface Services {
  config: Config;
  log: Logger;
  db: Knex;
  boss: PgBoss;
  /** The process's one LISTEN connection, shared by the SSE streams and the worker loops. */
  listenHub: ListenHub;
  /** The process's own Postgres session: its id names what this process claims, and dies with it. */
  processSession: ProcessSession;
  storage: Storage;
  /** The payment processor (the real one, or the simulator over HTTP), its circuit in Postgres. */
  paymentProcessor: PaymentProcessor;
  /** This process's circuits towards the outside services it calls on its own (identity providers, push gateways). */
  circuits: Circuits;
}

/** Something a process role started and must stop at shutdown (a server, a job loop, a consumer). */
export interface RunningPart {
  stop(): Promise<void>;
}

/** Stops parts in reverse start order, so later parts (which may use earlier ones) go first. */
export function stopAll(parts: RunningPart[]): RunningPart {
  return { stop: async () => { for (const part of [...parts].reverse()) await part.stop(); } };
}
