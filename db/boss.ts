import { fromKnex, PgBoss, type Db, type SendOptions } from 'pg-boss';
import type { Knex } from 'knex';
import type { Logger } from '../logger';
import { withBossSchemaUpgrade } from './boss-upgrade';

/** Every pg-boss queue of the service, created at start. */
export const queues = {
  generationSubmit: 'generation-submit',
  generationMedia: 'generation-media',
  pushSend: 'push-send',
  paymentReconcile: 'payment-reconcile',
  paymentChargebackWatch: 'payment-chargeback-watch',
  expireGuests: 'expire-guests',
  revokeIdpB: 'revoke-idp-b',
} as const;

export type QueueName = (typeof queues)[keyof typeof queues];

export const bossSchema = 'pgboss';

/** Starts pg-boss on its own schema, upgrading a pg-boss 10 schema first (`boss-upgrade.ts`), with every queue created. */
export async function startBoss(url: string, options: { supervise: boolean; schedule: boolean }, log: Logger): Promise<PgBoss> {
  const { boss, copiedJobs } = await withBossSchemaUpgrade(url, bossSchema, async () => {
    const boss = new PgBoss({
      connectionString: url,
      schema: bossSchema,
      application_name: 'effects-backend-boss',
      max: 4,
      supervise: options.supervise,
      schedule: options.schedule,
      migrate: true,
    });
    await boss.start();
    for (const name of Object.values(queues)) {
      if (!(await boss.getQueue(name))) await boss.createQueue(name).catch(ignoreDuplicateQueue);
    }
    return boss;
  });
  if (copiedJobs !== null) log.warn({ copiedJobs }, 'pg-boss 10 schema upgraded: unfinished jobs copied into the pg-boss 12 schema');
  return boss;
}

function ignoreDuplicateQueue(error: unknown): void {
  // Two processes starting together both try to create the queue; the loser's insert conflicts.
  if (!/already exists|duplicate key/i.test(String((error as Error).message))) throw error;
}

/**
 * pg-boss's `db` option bound to a knex transaction: send, fetch, complete and fail then happen in
 * the caller's transaction, so a job changes state exactly when the rows beside it do.
 */
export function bossIn(trx: Knex.Transaction): Db {
  return fromKnex(trx);
}

/** Enqueues inside the caller's transaction, so the job exists exactly when the transaction commits. */
export async function enqueueInTransaction(
  boss: PgBoss,
  trx: Knex.Transaction,
  queue: QueueName,
  data: object,
  options: SendOptions = {},
): Promise<string | null> {
  return boss.send(queue, data, { ...options, db: bossIn(trx) });
}
