import type { Knex } from 'knex';
import { isPeriodPayment, periodNotPaid } from '../subscriptions/period-payments';
import { announcePaymentChange } from './announce-payment-change';
import type { PaymentRow } from './model';

/**
 * `created` → `failed` for a payment whose order the processor never registered (it refused or could
 * not be reached, or the registering process died and no retry came). No payer ever saw a payment
 * page for it, so nothing can be paid: it holds no slot and counts against no purchase limit.
 * A subscription whose first payment it was ends.
 */
export async function closeUnregistered(trx: Knex.Transaction, paymentId: string): Promise<PaymentRow | null> {
  const { rows } = await trx.raw<{ rows: PaymentRow[] }>(
    `update payments set status = 'failed', closed_reason = 'not_registered', status_changed_at = now(), next_check_at = null
     where id = :paymentId and status = 'created' and payment_url is null
     returning *`,
    { paymentId },
  );
  const row = await announcePaymentChange(trx, rows);
  if (row && isPeriodPayment(row)) await periodNotPaid(trx, row, 'not_registered');
  return row;
}
