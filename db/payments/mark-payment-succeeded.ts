import type { Knex } from 'knex';
import { credit } from '../credits/ledger';
import { isPeriodPayment, periodPaid } from '../subscriptions/period-payments';
import { announcePaymentChange } from './announce-payment-change';
import type { PaymentRow } from './model';
import { watchBindings, type WatchSettings } from './watch';

/**
 * `created`, `failed` or `expired` → `succeeded`: the processor confirmed capture. The pack's credits
 * are credited in the same transaction (`purchase`), or, for a subscription's payment, its period
 * starts with its plan credits (`db/subscriptions/period-payments.ts`). The status guard lets exactly one of any number of
 * concurrent callers (webhook, refresh, reconciliation) through: the others wait for its row lock,
 * re-read the row and find it `succeeded`. The ledger's unique (user, kind, reference) backs it up.
 */
export async function markPaymentSucceeded(trx: Knex.Transaction, paymentId: string, receiptUrl: string | null, settings: WatchSettings): Promise<PaymentRow | null> {
  const { rows } = await trx.raw<{ rows: PaymentRow[] }>(
    `update payments set
       status = 'succeeded',
       paid_at = now(),
       receipt_url = coalesce(:receiptUrl, receipt_url),
       status_changed_at = now(),
       next_check_at = case when :chargebackWatchDays > 0 then now() + make_interval(secs => :chargebackIntervalS) end
     where id = :paymentId and status in ('created', 'failed', 'expired')
     returning *`,
    { paymentId, receiptUrl, ...watchBindings(settings) },
  );
  const row = await announcePaymentChange(trx, rows);
  if (!row) return null;
  if (!isPeriodPayment(row) || !(await periodPaid(trx, row))) {
    await credit(trx, { userId: row.user_id, kind: 'purchase', amount: row.credits, reference: row.id });
  }
  return row;
}
