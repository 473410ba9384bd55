import type { Knex } from 'knex';

/** The subscription's newest payment is the one just made for it (`payment_id` follows the latest charge). */
export async function recordLatestPayment(trx: Knex.Transaction, subscriptionId: string, paymentId: string): Promise<void> {
  await trx.raw(
    `update subscriptions set payment_id = :paymentId
     where id = :subscriptionId and exists (select 1 from payments where id = :paymentId and subscription_id = :subscriptionId)`,
    { subscriptionId, paymentId },
  );
}
