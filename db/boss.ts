import PgBoss from 'pg-boss';
import type { Knex } from 'knex';
import { connectionOf } from './knex';

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

export async function startBoss(url: string, options: { supervise: boolean; schedule: boolean }): Promise<PgBoss> {
  const boss = new PgBoss({
    connectionString: url,
    schema: 'pgboss',
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
}

function ignoreDuplicateQueue(error: unknown): void {
  // Two processes starting together both try to create the queue; the loser's insert conflicts.
  if (!/already exists|duplicate key/i.test(String((error as Error).message))) throw error;
}

/**
 * pg-boss's `db` option bound to a knex transaction: send, fetch, complete and fail then happen in
 * the caller's transaction, so a job changes state exactly when the rows beside it do.
 */
export async function bossIn(trx: Knex.Transaction): Promise<PgBoss.Db> {
  const connection = await connectionOf(trx);
  return { executeSql: (text: string, values: unknown[]) => connection.query(text, values) };
}

/** Enqueues inside the caller's transaction, so the job exists exactly when the transaction commits. */
export async function enqueueInTransaction(
  boss: PgBoss,
  trx: Knex.Transaction,
  queue: QueueName,
  data: object,
  options: PgBoss.SendOptions = {},
): Promise<string | null> {
  return boss.send(queue, data, { ...options, db: await bossIn(trx) });
}
