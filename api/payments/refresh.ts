import { checkOrder } from '../../services/payments/check-order';
import { terminalStatuses, type PaymentRow } from '../../db/payments/model';
import type { Services } from '../../services';
import { errors } from '../http/errors';
import { findOwnPayment, paymentView, type PaymentView } from './views';

/**
 * `POST /v1/payments/{id}/refresh`: the payer came back, so ask the processor now, but at most once
 * per `PAYMENT_REFRESH_MIN_INTERVAL_S` per payment whoever asks (the claim is one guarded update, so
 * concurrent refreshes cannot both pass). Otherwise, and when the processor does not answer, the
 * answer comes from our own data; a terminal payment is returned as is.
 */
export async function refreshPayment(services: Services, userId: string, paymentId: string): Promise<PaymentView> {
  const { db, config } = services;
  const payment = await findOwnPayment(db, userId, paymentId);
  if (!payment) throw errors.notFound();
  if (!config.payments.enabled) throw errors.providerUnavailable('Payments are switched off.');
  if (terminalStatuses.includes(payment.status) || !payment.processor_order_id) return paymentView(payment);
  const claimed = await db.raw<{ rows: PaymentRow[] }>(
    `update payments set last_checked_at = now()
     where id = :paymentId
       and (last_checked_at is null or last_checked_at <= now() - make_interval(secs => :minIntervalS))
     returning *`,
    { paymentId, minIntervalS: config.payments.refreshMinIntervalS },
  );
  if (!claimed.rows.length) return paymentView(payment);
  await checkOrder(services, claimed.rows[0]);
  const current = await findOwnPayment(db, userId, paymentId);
  return paymentView(current!);
}
