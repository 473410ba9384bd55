import { reconcilePayments } from './reconcile-payments';
import type { RunningPart, Services } from '../../services';

/**
 * The payment jobs of the scheduler role, on pg-boss cron (one copy fires each schedule, however many
 * schedulers run; a round claims its payments with `skip locked` anyway):
 * - `payment-reconcile`, every minute: open payments (`created`, then `failed` and `expired` for a
 *   late success) are checked with the processor when due;
 * - `payment-chargeback-watch`, every five minutes: paid payments are checked for refunds and
 *   chargebacks for PAYMENT_CHARGEBACK_WATCH_DAYS (45).
 * How often one payment is asked is set by its `next_check_at`, not by the cron.
 */
const everyMinute = '* * * * *';
const everyFiveMinutes = '*/5 * * * *';

export async function startPaymentJobs(services: Services): Promise<RunningPart> {
  const { boss } = services;
  await boss.schedule('payment-reconcile', everyMinute);
  await boss.work('payment-reconcile', async () => {
    await reconcilePayments(services, 'open');
  });
  await boss.schedule('payment-chargeback-watch', everyFiveMinutes);
  await boss.work('payment-chargeback-watch', async () => {
    await reconcilePayments(services, 'paid');
  });
  return {
    stop: async () => {
      await boss.offWork('payment-reconcile');
      await boss.offWork('payment-chargeback-watch');
    },
  };
}
