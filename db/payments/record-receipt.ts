import type { Knex } from 'knex';

/** The fiscal receipt link of a paid payment, when it appears after the payment was marked paid. */
export async function recordReceipt(trx: Knex.Transaction, paymentId: string, receiptUrl: string): Promise<void> {
  await trx.raw(
    `update payments set receipt_url = :receiptUrl
     where id = :paymentId and status in ('succeeded', 'refunded') and receipt_url is null`,
    { paymentId, receiptUrl },
  );
}
