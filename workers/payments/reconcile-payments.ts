import pLimit from 'p-limit';
import type { Services } from '../../services';
import { checkOrder } from '../../db/payments/check-order';
import type { PaymentRow, PaymentStatus } from '../../db/payments/model';
import { closeUnregistered } from '../../db/payments/close-unregistered';

/**
 * Server-to-server reconciliation, run by the scheduler role. Two watches share one mechanism:
 * - `open`: `created` payments until the processor decides them (success confirmed within a few
 *   minutes without webhook or refresh; `expired` only once the processor says so), then `failed`
 *   and `expired` ones for a while longer, for the late success;
 * - `paid`: `succeeded` payments for PAYMENT_CHARGEBACK_WATCH_DAYS, for refunds and chargebacks.
 *
 * A round claims due payments with one statement (`for update skip locked`, moving `next_check_at`
 * on), so rounds running at once in several processes never check a payment twice, and a payment
 * whose check failed (the processor is down) is simply due again next time.
 */
export type Watch = 'open' | 'paid';

const watchedStatuses: Record<Watch, PaymentStatus[]> = {
  open: ['created', 'failed', 'expired'],
  paid: ['succeeded'],
};

/** A created payment still without an order this long after creation will never get one. */
const unregisteredGiveUpS = 60 * 60;

const concurrency = 4;

export interface RoundResult {
  checked: number;
  unavailable: number;
  closed: number;
}

export async function reconcilePayments(services: Services, watch: Watch): Promise<RoundResult> {
  const { db, config } = services;
  const settings = config.payments;
  const { rows } = await db.raw<{ rows: PaymentRow[] }>(
    `with due as (
       select id from payments
       where next_check_at <= now() and status = any(:statuses)
       order by next_check_at
       limit :batch
       for update skip locked
     )
     update payments p set
       next_check_at = case
         when p.status = 'created' then now() + make_interval(secs => :intervalS)
         when p.status in ('failed', 'expired') and p.created_at + make_interval(secs => :lateWatchS) > now()
           then now() + make_interval(secs => :lateIntervalS)
         when p.status = 'succeeded' and p.paid_at + make_interval(days => :chargebackWatchDays) > now()
           then now() + make_interval(secs => :chargebackIntervalS)
       end
     from due where p.id = due.id
     returning p.*`,
    {
      statuses: watchedStatuses[watch],
      batch: settings.reconcileBatch,
      intervalS: settings.reconcileIntervalS,
      lateWatchS: settings.lateWatchS,
      lateIntervalS: settings.lateCheckIntervalS,
      chargebackWatchDays: settings.chargebackWatchDays,
      chargebackIntervalS: settings.chargebackCheckIntervalS,
    },
  );
  const result: RoundResult = { checked: 0, unavailable: 0, closed: 0 };
  if (!rows.length) return result;
  const limit = pLimit(concurrency);
  let processorDown = false;
  await Promise.all(rows.map((payment) => limit(async () => {
    if (!payment.processor_order_id) {
      if (payment.status === 'created' && payment.created_at.getTime() < Date.now() - unregisteredGiveUpS * 1000) {
        if (await db.transaction((trx) => closeUnregistered(trx, payment.id))) result.closed += 1;
      }
      return;
    }
    // Once the processor is silent, the rest of the round would only wait out timeouts; the skipped
    // payments are due again at their next check.
    if (processorDown) return;
    const outcome = await checkOrder(services, payment);
    if (outcome === 'unavailable') {
      processorDown = true;
      result.unavailable += 1;
    } else {
      result.checked += 1;
    }
  })));
  services.log.info({ watch, claimed: rows.length, ...result }, 'payments: reconciliation round');
  return result;
}
