import type { Knex } from 'knex';

/**
 * failed -> failed, replayed: names the new attempt on the failed generation, inside the transaction
 * that creates the attempt. False when it was replayed already (by another run, at the same time
 * or before): the caller rolls the attempt back, so a failure is replayed, and charged, once.
 */
export async function recordReplay(trx: Knex.Transaction, failedId: string, attemptId: string): Promise<boolean> {
  const { rows } = await trx.raw<{ rows: unknown[] }>(
    "update generations set replayed_as = :attemptId where id = :failedId and status = 'failed' and replayed_as is null returning id",
    { failedId, attemptId },
  );
  return rows.length === 1;
}
