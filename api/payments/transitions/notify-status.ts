import type { Knex } from 'knex';
import type { PaymentRow } from '../interfaces';

/** The NOTIFY channel the payment stream listens to. */
export const paymentStatusChannel = 'payment_status';

export interface PaymentStatusEvent {
  id: string;
  user_id: string;
  status: PaymentRow['status'];
  paid_at: string | null;
}

/**
 * Announces a status change inside the transaction that made it: Postgres delivers the NOTIFY at
 * commit, so listeners never hear of a change that was rolled back.
 */
export async function notifyPaymentStatus(trx: Knex.Transaction, row: PaymentRow): Promise<void> {
  const event: PaymentStatusEvent = { id: row.id, user_id: row.user_id, status: row.status, paid_at: row.paid_at?.toISOString() ?? null };
  await trx.raw('select pg_notify(?, ?)', [paymentStatusChannel, JSON.stringify(event)]);
}
