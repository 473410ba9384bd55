import type { Knex } from 'knex';
import { notify } from '../channels';
import type { PaymentRow } from './model';

/**
 * After a guarded payment statement: null when it changed nothing (the guard did not match), else
 * the changed row, whose new status is announced on `payment_status` in the same transaction.
 */
export async function announcePaymentChange(trx: Knex.Transaction, rows: PaymentRow[]): Promise<PaymentRow | null> {
  const row = rows[0];
  if (!row) return null;
  await notify(trx, 'payment_status', { id: row.id, user_id: row.user_id, status: row.status, paid_at: row.paid_at?.toISOString() ?? null });
  return row;
}
