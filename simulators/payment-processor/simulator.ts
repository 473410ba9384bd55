import Router from '@koa/router';
import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { SIMULATOR_PREFIX } from '../../clients/payment-processor/create-payment-processor';
import { ActionCode, BindingErrorCode, CURRENCY_RUB, ErrorCode, OrderStatus, type OrderStatusAnswer, type PaymentBindingAnswer } from '../../clients/payment-processor/protocol';
import type { Logger } from '../../common/logger';
import { sendPage } from '../../media/pages/headers';
import { createNotifier } from './notifier';
import { payerOutcomes, SimulatedOrderBook, type BindingChargeResult, type PayerOutcome, type SimulatedOrder, type Transition } from './orders';
import { noticePage, orderNotFoundPage, paymentPage, paymentPagePolicy, receiptPage } from './pages';

export type SimulatorFault = null | 'down' | 'hang';

export interface ProcessorSimulatorOptions {
  /** How payers reach the service; the payment page is `${publicBaseUrl}/sim/processor/pay/<orderId>`. */
  publicBaseUrl: string;
  userName: string;
  password: string;
  notificationSecret: string;
  /** Where signed notifications are POSTed as a form. */
  callbackUrl: string;
  log?: Logger;
  now?: () => Date;
  notificationRetryDelaysMs?: readonly number[];
}

export interface ProcessorSimulator {
  /** Mount on the service's web app. */
  routes: Middleware;
  /** `down`: the API answers 503 at once; `hang`: it holds requests until the fault is cleared. Pages keep working. */
  setFault(mode: SimulatorFault): void;
  orders: ReadonlyMap<string, Readonly<SimulatedOrder>>;
  /** Notifications the merchant has answered `2xx` so far. */
  notificationsDelivered(): number;
}

const DEFAULT_RETRY_DELAYS_MS = [1000, 5000];
const NOTIFICATION_TIMEOUT_MS = 5000;

const actionCodeDescriptions: Record<number, string> = {
  [ActionCode.approved]: 'Approved',
  [ActionCode.noPaymentAttempts]: 'No payment attempts',
  [ActionCode.insufficientFunds]: 'Insufficient funds',
  [ActionCode.systemMalfunction]: 'System malfunction',
  [ActionCode.issuerTimedOut]: 'Card issuer timed out',
  [ActionCode.sessionExpired]: 'Payment session expired',
};

/**
 * An in-memory payment processor speaking the same HTTP API as the real one, with its hosted payment
 * page, signed callbacks, operator actions and fault switches. Never part of a production config.
 */
export function createProcessorSimulator(options: ProcessorSimulatorOptions): ProcessorSimulator {
  const publicBaseUrl = options.publicBaseUrl.replace(/\/+$/, '');
  const { log } = options;
  const notifier = createNotifier({
    callbackUrl: options.callbackUrl,
    secret: options.notificationSecret,
    retryDelaysMs: options.notificationRetryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
    attemptTimeoutMs: NOTIFICATION_TIMEOUT_MS,
    log,
  });
  const book = new SimulatedOrderBook(options.now ?? (() => new Date()), (event) => {
    log?.info({ orderId: event.order.orderId, operation: event.operation }, 'processor simulator: order changed');
    notifier.notify(event);
  });
  const paymentUrl = (orderId: string) => `${publicBaseUrl}${SIMULATOR_PREFIX}/pay/${orderId}`;
  const receiptUrl = (orderId: string) => `${publicBaseUrl}${SIMULATOR_PREFIX}/receipts/${orderId}`;

  let fault: SimulatorFault = null;
  let hang: { released: Promise<void>; release: () => void } | null = null;

  const faults: Middleware = async (ctx, next) => {
    if (fault === 'down') {
      ctx.status = 503;
      ctx.body = 'Service Unavailable';
      return;
    }
    if (hang) await hang.released;
    await next();
  };

  const credentials: Middleware = async (ctx, next) => {
    const { userName, password } = form(ctx);
    if (userName !== options.userName || password !== options.password) {
      ctx.body = { errorCode: ErrorCode.invalidParameter, errorMessage: 'Access denied' };
      return;
    }
    await next();
  };

  const router = new Router({ prefix: SIMULATOR_PREFIX });

  router.post('/register.do', faults, parseForm, credentials, (ctx) => {
    const params = form(ctx);
    // Mounted on the service's own origin, a return URL elsewhere would make the simulator an open redirect.
    if (![params.returnUrl, params.failUrl].every((url) => !url || isOnSite(url, publicBaseUrl))) {
      ctx.body = { errorCode: ErrorCode.invalidParameter, errorMessage: 'Return URL must be on the merchant site' };
      return;
    }
    const result = book.register(params);
    if ('errorCode' in result) {
      ctx.body = result;
      return;
    }
    log?.info({ orderId: result.order.orderId, orderNumber: result.order.orderNumber }, 'processor simulator: order registered');
    ctx.body = { orderId: result.order.orderId, formUrl: paymentUrl(result.order.orderId) };
  });

  router.post('/getOrderStatusExtended.do', faults, parseForm, credentials, (ctx) => {
    const order = book.find(form(ctx).orderId ?? '');
    ctx.body = order ? statusAnswer(order, receiptUrl) : { errorCode: ErrorCode.orderNotFound, errorMessage: 'Order not found' };
  });

  // A saved card charged server-to-server: decided at once, reported by callback like a page payment.
  router.post('/paymentOrderBinding.do', faults, parseForm, credentials, (ctx) => {
    const params = form(ctx);
    const order = book.find(params.mdOrder ?? '');
    ctx.body = order ? bindingAnswers[book.chargeWithBinding(order, params.bindingId ?? '')] : { errorCode: ErrorCode.orderNotFound, errorMessage: 'Order not found' };
  });

  router.get('/pay/:orderId', (ctx) => {
    const order = book.find(ctx.params.orderId);
    if (!order) return sendPage(ctx, { status: 404, html: orderNotFoundPage() });
    sendPage(ctx, book.isPayable(order)
      ? { html: paymentPage(order, order.status === OrderStatus.declined), policy: paymentPagePolicy(order) }
      : { html: noticePage(order.language, unpayableNotice(order)) });
  });

  router.post('/pay/:orderId', parseForm, (ctx) => {
    const order = book.find(ctx.params.orderId);
    if (!order) return sendPage(ctx, { status: 404, html: orderNotFoundPage() });
    const outcome = form(ctx).outcome;
    if (!isPayerOutcome(outcome)) return sendPage(ctx, { status: 400, html: noticePage(order.language, 'unknownOutcome') });
    if (book.pay(order, outcome) === 'not_allowed') return sendPage(ctx, { status: 409, html: noticePage(order.language, unpayableNotice(order)) });
    if (outcome === 'unknown') return sendPage(ctx, { html: noticePage(order.language, 'pending') });
    ctx.status = 303;
    ctx.redirect(outcome === 'success' ? order.returnUrl : order.failUrl);
  });

  const operatorActions: Record<string, (order: SimulatedOrder) => Transition> = {
    refund: (order) => book.refund(order),
    chargeback: (order) => book.chargeback(order),
    expire: (order) => book.expire(order),
    'sbp-pay': (order) => book.pay(order, 'success', 'sbp'),
    'late-capture': (order) => book.lateCapture(order),
    'decline-next': (order) => book.declineNextCharge(order),
  };

  // The operator's cabinet: the merchant's credentials as form fields, like every merchant call.
  router.post('/orders/:orderId/:action', parseForm, (ctx, next) => {
    const action = operatorActions[ctx.params.action];
    if (!action) return next();
    const { userName, password } = form(ctx);
    if (userName !== options.userName || password !== options.password) {
      ctx.status = 401;
      ctx.body = { error: 'access_denied' };
      return;
    }
    const order = book.find(ctx.params.orderId);
    if (!order) {
      ctx.status = 404;
      ctx.body = { error: 'order_not_found' };
      return;
    }
    if (action(order) === 'not_allowed') ctx.status = 409;
    ctx.body = { orderId: order.orderId, orderStatus: order.status, actionCode: order.actionCode };
  });

  router.get('/receipts/:orderId', (ctx) => {
    const order = book.find(ctx.params.orderId);
    sendPage(ctx, order?.depositedAt ? { html: receiptPage(order) } : { status: 404, html: orderNotFoundPage() });
  });

  return {
    // The router's context type adds route params; mounted on any Koa app it is still plain middleware.
    routes: router.routes() as Middleware,
    setFault(mode) {
      fault = mode;
      if (mode === 'hang' && !hang) {
        let release = () => {};
        const released = new Promise<void>((resolve) => { release = resolve; });
        hang = { released, release };
      } else if (mode !== 'hang' && hang) {
        hang.release();
        hang = null;
      }
    },
    orders: book.orders,
    notificationsDelivered: notifier.delivered,
  };
}

const bindingAnswers: Record<BindingChargeResult, PaymentBindingAnswer> = {
  charged: { errorCode: ErrorCode.none, errorMessage: 'Success' },
  declined: { errorCode: BindingErrorCode.declined, errorMessage: 'Payment declined' },
  not_allowed: { errorCode: BindingErrorCode.notAllowed, errorMessage: 'Order cannot be paid with this binding' },
  binding_not_found: { errorCode: BindingErrorCode.bindingNotFound, errorMessage: 'Binding not found' },
};

function statusAnswer(order: SimulatedOrder, receiptUrl: (orderId: string) => string): OrderStatusAnswer {
  return {
    errorCode: ErrorCode.none,
    errorMessage: 'Success',
    orderNumber: order.orderNumber,
    orderStatus: order.status,
    actionCode: order.actionCode,
    actionCodeDescription: actionCodeDescriptions[order.actionCode] ?? '',
    amount: order.amount,
    currency: String(CURRENCY_RUB),
    ...(order.depositedAt ? { depositedDate: order.depositedAt.getTime(), receiptUrl: receiptUrl(order.orderId) } : {}),
    ...(order.refundedAmount > 0 ? { refundedAmount: order.refundedAmount } : {}),
    ...(order.chargeback ? { chargeback: true } : {}),
    ...(order.bindingId ? { bindingInfo: { clientId: order.clientId ?? undefined, bindingId: order.bindingId } } : {}),
  };
}

function unpayableNotice(order: SimulatedOrder): 'alreadyPaid' | 'expired' | 'notPayable' {
  if (order.status === OrderStatus.deposited) return 'alreadyPaid';
  if (order.status === OrderStatus.declined) return 'expired';
  return 'notPayable';
}

/** Whether `url` is an address of the merchant's site (same origin, under its base path). */
function isOnSite(url: string, siteBaseUrl: string): boolean {
  try {
    const target = new URL(url);
    const site = new URL(`${siteBaseUrl}/`);
    return target.origin === site.origin && target.pathname.startsWith(site.pathname) && !target.username && !target.password;
  } catch {
    return false;
  }
}

function isPayerOutcome(value: unknown): value is PayerOutcome {
  return (payerOutcomes as readonly unknown[]).includes(value);
}

const formParser = koaBody({ urlencoded: true, json: false, multipart: false, text: false, formLimit: '64kb' }) as unknown as Middleware;

/** The service's app may have parsed the body already; a second read of the stream would fail. */
const parseForm: Middleware = (ctx, next) => (ctx.request.body === undefined ? formParser(ctx, next) : next());

function form(ctx: { request: { body?: unknown } }): Record<string, string | undefined> {
  const body = ctx.request.body;
  if (typeof body !== 'object' || body === null) return {};
  return Object.fromEntries(Object.entries(body).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}
