import type { Knex } from 'knex';
import type { PaymentRow } from './model';

/**
 * Keeps the processor's order id and payment page of a `created` payment. A repeat registration
 * (a retry reopening the payment) gets the same order back, so the same values are written again.
 */
export async function recordRegistration(db: Knex, paymentId: string, order: { orderId: string; paymentUrl: string | null }): Promise<PaymentRow | null> {
  const { rows } = await db.raw<{ rows: PaymentRow[] }>(
    `update payments set processor_order_id = :orderId, payment_url = :paymentUrl
     where id = :paymentId and status = 'created' and (processor_order_id is null or processor_order_id = :orderId)
     returning *`,
    { paymentId, orderId: order.orderId, paymentUrl: order.paymentUrl },
  );
  return rows[0] ?? null;
}
