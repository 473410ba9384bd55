import type { Knex } from 'knex';
import { debitUpTo } from '../credits/ledger';
import { isPeriodPayment, periodRefunded } from '../subscriptions/period-payments';
import { announcePaymentChange } from './announce-payment-change';
import type { PaymentRow } from './model';

/**
 * `succeeded` → `refunded`: refund by the operator or a chargeback. What is left of the pack's
 * credits is revoked once (`purchase_revoke`); credits already spent are not taken back and the
 * balance never goes below zero. A subscription's payment revokes its subscription instead
 * (`db/subscriptions/period-payments.ts`). Terminal: the watch ends.
 */
export async function markPaymentRefunded(trx: Knex.Transaction, paymentId: string): Promise<PaymentRow | null> {
  const { rows } = await trx.raw<{ rows: PaymentRow[] }>(
    `update payments set status = 'refunded', refunded_at = now(), status_changed_at = now(), next_check_at = null
     where id = :paymentId and status = 'succeeded'
     returning *`,
    { paymentId },
  );
  const row = await announcePaymentChange(trx, rows);
  if (!row) return null;
  if (isPeriodPayment(row)) await periodRefunded(trx, row);
  else await debitUpTo(trx, { userId: row.user_id, kind: 'purchase_revoke', amount: row.credits, reference: row.id });
  return row;
}
