import type { Knex } from 'knex';
import { isPeriodPayment, periodNotPaid } from '../subscriptions/period-payments';
import { announcePaymentChange } from './announce-payment-change';
import type { PaymentRow } from './model';
import { watchBindings, type WatchSettings } from './watch';

/**
 * `created` → `expired`: only when the processor itself declared the order expired, never by our own
 * clock. The slot is free from now on; the payment stays watched for the rare late capture.
 * A subscription whose first payment expired ends.
 */
export async function markPaymentExpired(trx: Knex.Transaction, paymentId: string, settings: WatchSettings): Promise<PaymentRow | null> {
  const { rows } = await trx.raw<{ rows: PaymentRow[] }>(
    `update payments set status = 'expired', status_changed_at = now(),
       next_check_at = now() + make_interval(secs => :lateIntervalS)
     where id = :paymentId and status = 'created'
     returning *`,
    { paymentId, ...watchBindings(settings) },
  );
  const row = await announcePaymentChange(trx, rows);
  if (row && isPeriodPayment(row)) await periodNotPaid(trx, row, 'expired');
  return row;
}
