import type { Knex } from 'knex';
import { announcePaymentChange } from './announce-payment-change';
import type { PaymentRow } from './model';
import { watchBindings, type WatchSettings } from './watch';

/**
 * `created` → `failed`: the processor declined the attempt. Not terminal: the payer may retry on the
 * same page, so the payment stays watched for a late success.
 */
export async function markPaymentFailed(trx: Knex.Transaction, paymentId: string, settings: WatchSettings): Promise<PaymentRow | null> {
  const { rows } = await trx.raw<{ rows: PaymentRow[] }>(
    `update payments set status = 'failed', status_changed_at = now(),
       next_check_at = now() + make_interval(secs => :lateIntervalS)
     where id = :paymentId and status = 'created'
     returning *`,
    { paymentId, ...watchBindings(settings) },
  );
  return announcePaymentChange(trx, rows);
}
