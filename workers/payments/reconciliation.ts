import pLimit from 'p-limit';
import { checkOrder } from '../../services/payments/check-order';
import { claimDueChecks } from '../../db/payments/claim-due-checks';
import { closeUnregistered } from '../../db/payments/close-unregistered';
import type { PaymentStatus } from '../../db/payments/model';
import { stopAll, type RunningPart, type Services } from '../../services';
import { startQueueConsumer } from '../runtime/queue-consumer';

/**
 * Server-to-server reconciliation, run by the scheduler role on pg-boss cron (one copy fires each
 * schedule, however many schedulers run). Two watches share one mechanism:
 * - `open` (`payment-reconcile`, every minute): `created` payments until the processor decides them
 *   (success confirmed within a few minutes without webhook or refresh; `expired` only once the
 *   processor says so), then `failed` and `expired` ones for a while longer, for the late success;
 * - `paid` (`payment-chargeback-watch`, every five minutes): `succeeded` payments for
 *   PAYMENT_CHARGEBACK_WATCH_DAYS, for refunds and chargebacks.
 * How often one payment is asked is set by its `next_check_at` (`claimDueChecks`), not by the cron.
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
  const rows = await claimDueChecks(db, watchedStatuses[watch], config.payments);
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

export async function startPaymentReconciliation(services: Services): Promise<RunningPart> {
  return stopAll([
    await startQueueConsumer(services, {
      queue: 'payment-reconcile',
      cron: '* * * * *',
      concurrency: 1,
      handle: async () => { await reconcilePayments(services, 'open'); },
    }),
    await startQueueConsumer(services, {
      queue: 'payment-chargeback-watch',
      cron: '*/5 * * * *',
      concurrency: 1,
      handle: async () => { await reconcilePayments(services, 'paid'); },
    }),
  ]);
}
