import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import { enqueueInTransaction, queues } from '../../../db/boss';
import { statusChannel, type PushJobData, type StatusEvent } from '../model';

/**
 * Every status change of a generation, creation included, is announced in the transaction that
 * makes it: a NOTIFY on `generation_status` (the SSE streams and the dispatchers listen), delivered
 * only if the change commits. Payloads are a few hundred bytes, far below NOTIFY's 8000.
 */
export async function notifyGenerationStatus(trx: Knex.Transaction, event: StatusEvent): Promise<void> {
  const payload: StatusEvent = { id: event.id, user_id: event.user_id, status: event.status, error_code: event.error_code };
  await trx.raw('select pg_notify(?, ?)', [statusChannel, JSON.stringify(payload)]);
}

/** A terminal status also sends a push (contract B: every terminal status, early `failed` included). */
export async function announceTerminalStatus(trx: Knex.Transaction, boss: PgBoss, event: StatusEvent & { status: 'succeeded' | 'failed' }): Promise<void> {
  await notifyGenerationStatus(trx, event);
  const push: PushJobData = { userId: event.user_id, generationId: event.id, status: event.status, errorCode: event.error_code };
  await enqueueInTransaction(boss, trx, queues.pushSend, push, { retryLimit: 3, retryDelay: 10, retryBackoff: true });
}
