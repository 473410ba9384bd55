import type { Knex } from 'knex';
import { isPeriodPayment, periodNotPaid } from '../subscriptions/period-payments';
import { announcePaymentChange } from './announce-payment-change';
import type { PaymentRow } from './model';
import { watchBindings, type WatchSettings } from './watch';

/**
 * `created` → `failed`: the processor declined the attempt. Not terminal: the payer may retry on the
 * same page, so the payment stays watched for a late success.
 * A declined renewal charge makes its subscription `past_due`.
 */
export async function markPaymentFailed(trx: Knex.Transaction, paymentId: string, settings: WatchSettings): Promise<PaymentRow | null> {
  const { rows } = await trx.raw<{ rows: PaymentRow[] }>(
    `update payments set status = 'failed', status_changed_at = now(),
       next_check_at = now() + make_interval(secs => :lateIntervalS)
     where id = :paymentId and status = 'created'
     returning *`,
    { paymentId, ...watchBindings(settings) },
  );
  const row = await announcePaymentChange(trx, rows);
  if (row && isPeriodPayment(row)) await periodNotPaid(trx, row, 'declined');
  return row;
}
