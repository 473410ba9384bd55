import type { Middleware } from 'koa';
import { checkOrder } from '../../services/payments/check-order';
import { paymentWithRenewalJob } from '../../db/subscriptions/renewal-charge';
import type { ApiContext } from '../http/context';
import { isUuid } from '../../common/validation';

export const WEBHOOK_PATH = '/webhooks/payment-processor';

/**
 * The processor's signed notification (outside `/v1`: not part of the client API). It only says
 * which order moved; the order's state is then read with a status query and applied, so a duplicate,
 * a late or an out-of-order notification is harmless. A success about a payment already succeeded
 * needs no query, nor does one about a renewal charge whose job has not ended (the job applies it).
 * A notification that is unsigned, badly signed or incomplete changes nothing and is logged. Non-2xx
 * answers make the processor deliver again.
 */
export function paymentWebhook(): Middleware<ApiContext['state'], ApiContext> {
  return async (ctx, next) => {
    if (ctx.path !== WEBHOOK_PATH) return next();
    ctx.state.route = WEBHOOK_PATH;
    const { log } = ctx.services;
    const answer = (status: number, text: string) => {
      ctx.status = status;
      ctx.type = 'text/plain';
      ctx.body = text;
    };
    if (ctx.method !== 'POST' && ctx.method !== 'GET') {
      ctx.set('Allow', 'GET, POST');
      return answer(405, 'method not allowed');
    }
    const params = stringParams(ctx.method === 'GET' ? ctx.query : ctx.request.body);
    if (!params.checksum) {
      log.warn({ requestId: ctx.state.requestId, orderId: params.mdOrder }, 'payments: unsigned notification ignored');
      return answer(400, 'unsigned notification');
    }
    const notification = ctx.services.paymentProcessor.verifyNotification(params);
    if (!notification) {
      log.warn({ requestId: ctx.state.requestId, orderId: params.mdOrder }, 'payments: notification with a bad signature or fields ignored');
      return answer(403, 'bad signature');
    }
    const payment = isUuid(notification.paymentId) ? await paymentWithRenewalJob(ctx.services.db, ctx.services.boss, notification.paymentId) : null;
    if (!payment || payment.processor_order_id !== notification.orderId) {
      log.warn({ requestId: ctx.state.requestId, ...notification }, 'payments: notification about an unknown order');
      return answer(404, 'unknown order');
    }
    if (notification.operation === 'deposited' && notification.success && payment.status === 'succeeded') {
      // What it announces is applied already (a renewal's charge, read by the worker that made it):
      // a status query would only confirm it. A receipt that comes later is read by the paid watch.
      log.info({ paymentId: payment.id, operation: notification.operation }, 'payments: notification about a payment already succeeded');
      return answer(200, 'OK');
    }
    if (payment.renewal_job_pending) {
      // A renewal charge whose job has not ended: the job reads the order's status and applies it
      // (right after its charge, or first thing when retried), so a second read here would only
      // race it. Reconciliation watches the payment as any other.
      log.info({ paymentId: payment.id, operation: notification.operation }, 'payments: notification about a renewal its job applies');
      return answer(200, 'OK');
    }
    const outcome = await checkOrder(ctx.services, payment);
    if (outcome === 'unavailable') return answer(503, 'try again later');
    log.info({ paymentId: payment.id, operation: notification.operation, outcome }, 'payments: notification handled');
    return answer(200, 'OK');
  };
}

function stringParams(source: unknown): Record<string, string> {
  if (typeof source !== 'object' || source === null) return {};
  return Object.fromEntries(Object.entries(source).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}
