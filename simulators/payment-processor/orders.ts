import { randomUUID } from 'node:crypto';
import type { PaymentMethod } from '../../common/payment-method';
import type { NotificationOperation } from '../../clients/payment-processor/payment-processor';
import { ActionCode, CURRENCY_RUB, ErrorCode, OrderStatus, SESSION_TIMEOUT_SECS, type OrderBundle, type OrderStatusCode } from '../../clients/payment-processor/protocol';
import { languageOf, type Language } from '../../common/language';

/** What the simulated payer can make happen on the hosted page. */
export const payerOutcomes = ['success', 'insufficient_funds', 'system_error', 'unknown'] as const;
export type PayerOutcome = (typeof payerOutcomes)[number];

export interface SimulatedOrder {
  orderId: string;
  orderNumber: string;
  amount: number;
  currency: number;
  description: string;
  language: Language;
  method: PaymentMethod;
  returnUrl: string;
  failUrl: string;
  receiptItems: OrderBundle['cartItems']['items'];
  registeredAt: Date;
  expiresAt: Date;
  status: OrderStatusCode;
  actionCode: number;
  depositedAt: Date | null;
  refundedAmount: number;
  chargeback: boolean;
  /** The merchant's customer id, for orders that save a card or are charged with one. */
  clientId: string | null;
  /** Registered with `save_card`: paying it saves the card for `clientId`. */
  saveCard: boolean;
  /** The card this order saved or was charged with. */
  bindingId: string | null;
}

/** A saved card: charged server-to-server for its client's later orders. */
export interface SimulatedBinding {
  bindingId: string;
  clientId: string;
  /** The order whose payment saved it. */
  sourceOrderId: string;
  /** Charges still to decline (the operator's `decline-next`). */
  declinesQueued: number;
}

export type BindingChargeResult = 'charged' | 'declined' | 'binding_not_found' | 'not_allowed';

export interface OrderEvent {
  order: SimulatedOrder;
  operation: NotificationOperation;
  success: boolean;
}

export type RegisterResult = { order: SimulatedOrder } | { errorCode: string; errorMessage: string };

/** `not_allowed`: the order's status does not permit the action. */
export type Transition = 'done' | 'not_allowed';

/**
 * The simulated processor's orders and every status change they can go through. Each change that a
 * real processor reports by callback is handed to `onEvent`.
 */
export class SimulatedOrderBook {
  private readonly byId = new Map<string, SimulatedOrder>();
  private readonly byNumber = new Map<string, SimulatedOrder>();
  private readonly bindings = new Map<string, SimulatedBinding>();

  constructor(private readonly now: () => Date, private readonly onEvent: (event: OrderEvent) => void) {}

  get orders(): ReadonlyMap<string, Readonly<SimulatedOrder>> {
    return this.byId;
  }

  /**
   * An identical repeat of a still-open order (same order number and amount) returns that order, so a
   * merchant retrying after a lost answer gets the same page; any other reuse of the number is error 1.
   */
  register(params: Record<string, string | undefined>): RegisterResult {
    const { orderNumber, returnUrl } = params;
    if (!orderNumber) return { errorCode: ErrorCode.missingParameter, errorMessage: 'Order number is empty' };
    if (!params.amount) return { errorCode: ErrorCode.missingParameter, errorMessage: 'Amount is empty' };
    if (!returnUrl) return { errorCode: ErrorCode.missingParameter, errorMessage: 'Return URL is empty' };
    const amount = Number(params.amount);
    if (!/^\d+$/.test(params.amount) || amount <= 0) return { errorCode: ErrorCode.invalidParameter, errorMessage: 'Invalid amount' };
    const currency = params.currency ? Number(params.currency) : CURRENCY_RUB;
    if (currency !== CURRENCY_RUB) return { errorCode: ErrorCode.unknownCurrency, errorMessage: 'Unknown currency' };
    const receiptItems = parseBundle(params.orderBundle);
    if (receiptItems === null) return { errorCode: ErrorCode.invalidParameter, errorMessage: 'Invalid orderBundle' };
    if (receiptItems.length > 0 && receiptItems.reduce((sum, item) => sum + item.itemAmount, 0) !== amount) {
      return { errorCode: ErrorCode.invalidParameter, errorMessage: 'Sum of orderBundle items does not match amount' };
    }
    const sessionTimeoutSecs = params.sessionTimeoutSecs ? Number(params.sessionTimeoutSecs) : SESSION_TIMEOUT_SECS;
    if (!Number.isInteger(sessionTimeoutSecs) || sessionTimeoutSecs <= 0) {
      return { errorCode: ErrorCode.invalidParameter, errorMessage: 'Invalid sessionTimeoutSecs' };
    }

    const existing = this.byNumber.get(orderNumber);
    if (existing) {
      this.expireIfDue(existing);
      return existing.amount === amount && existing.status === OrderStatus.registered
        ? { order: existing }
        : { errorCode: ErrorCode.duplicateOrderNumber, errorMessage: 'Order with this number was already processed' };
    }

    const registeredAt = this.now();
    const order: SimulatedOrder = {
      orderId: randomUUID(),
      orderNumber,
      amount,
      currency,
      description: params.description ?? '',
      language: languageOf(params.language ?? ''),
      method: parseMethod(params.jsonParams),
      returnUrl,
      failUrl: params.failUrl || returnUrl,
      receiptItems,
      registeredAt,
      expiresAt: new Date(registeredAt.getTime() + sessionTimeoutSecs * 1000),
      status: OrderStatus.registered,
      actionCode: ActionCode.noPaymentAttempts,
      depositedAt: null,
      refundedAmount: 0,
      chargeback: false,
      clientId: params.clientId || null,
      saveCard: parseJsonParams(params.jsonParams).save_card === 'true',
      bindingId: null,
    };
    this.byId.set(order.orderId, order);
    this.byNumber.set(orderNumber, order);
    return { order };
  }

  /** The order as of now: an unpaid order past its session is expired on this read. */
  find(orderId: string): SimulatedOrder | undefined {
    const order = this.byId.get(orderId);
    if (order) this.expireIfDue(order);
    return order;
  }

  /** A declined attempt leaves the session open for another try until it times out. */
  isPayable(order: SimulatedOrder): boolean {
    if (this.now() >= order.expiresAt) return false;
    return order.status === OrderStatus.registered
      || (order.status === OrderStatus.declined && order.actionCode !== ActionCode.sessionExpired);
  }

  pay(order: SimulatedOrder, outcome: PayerOutcome, method: PaymentMethod = order.method): Transition {
    if (!this.isPayable(order)) return 'not_allowed';
    switch (outcome) {
      case 'success':
        order.method = method;
        if (order.saveCard && order.clientId && method === 'card') this.saveCard(order, order.clientId);
        this.deposit(order);
        break;
      case 'insufficient_funds':
      case 'system_error':
        this.decline(order, outcome === 'insufficient_funds' ? ActionCode.insufficientFunds : ActionCode.systemMalfunction);
        break;
      case 'unknown':
        // The issuer never answered: nothing is decided, so nothing is reported.
        order.actionCode = ActionCode.issuerTimedOut;
        break;
    }
    return 'done';
  }

  /**
   * Charges a saved card for a registered order at once (no payer, no page): only an order never
   * tried yet, of the card's own client. A queued decline is used up here.
   */
  chargeWithBinding(order: SimulatedOrder, bindingId: string): BindingChargeResult {
    const binding = this.bindings.get(bindingId);
    if (!binding) return 'binding_not_found';
    if (!this.isPayable(order) || order.status !== OrderStatus.registered || order.actionCode !== ActionCode.noPaymentAttempts
      || order.clientId !== binding.clientId) return 'not_allowed';
    order.bindingId = binding.bindingId;
    order.method = 'card';
    if (binding.declinesQueued > 0) {
      binding.declinesQueued -= 1;
      this.decline(order, ActionCode.insufficientFunds);
      return 'declined';
    }
    this.deposit(order);
    return 'charged';
  }

  /** The operator's hook: the next charge of the card this order saved (or was charged with) declines. */
  declineNextCharge(order: SimulatedOrder): Transition {
    const binding = order.bindingId ? this.bindings.get(order.bindingId) : undefined;
    if (!binding) return 'not_allowed';
    binding.declinesQueued += 1;
    return 'done';
  }

  refund(order: SimulatedOrder): Transition {
    return this.giveBack(order, 'refunded');
  }

  /** The disputed amount is returned to the payer, so the order reads as refunded with the chargeback flag. */
  chargeback(order: SimulatedOrder): Transition {
    return this.giveBack(order, 'chargeback');
  }

  /**
   * The bank confirms a capture after the order was declined or its session ended (a bank transfer
   * that settled late): the rare move of a `failed` or `expired` payment to `succeeded`.
   */
  lateCapture(order: SimulatedOrder): Transition {
    if (order.status !== OrderStatus.declined) return 'not_allowed';
    this.deposit(order);
    return 'done';
  }

  expire(order: SimulatedOrder): Transition {
    if (order.status !== OrderStatus.registered) return 'not_allowed';
    order.status = OrderStatus.declined;
    order.actionCode = ActionCode.sessionExpired;
    this.onEvent({ order, operation: 'declinedByTimeout', success: false });
    return 'done';
  }

  /** A captured order's money goes back to the payer, by refund or by chargeback. */
  private giveBack(order: SimulatedOrder, operation: 'refunded' | 'chargeback'): Transition {
    if (order.status !== OrderStatus.deposited) return 'not_allowed';
    order.status = OrderStatus.refunded;
    order.refundedAmount = order.amount;
    order.chargeback = operation === 'chargeback';
    this.onEvent({ order, operation, success: true });
    return 'done';
  }

  /** The money is captured, and the merchant told. */
  private deposit(order: SimulatedOrder): void {
    order.status = OrderStatus.deposited;
    order.actionCode = ActionCode.approved;
    order.depositedAt = this.now();
    this.onEvent({ order, operation: 'deposited', success: true });
  }

  /** The issuer said no (`actionCode` says why), and the merchant is told. */
  private decline(order: SimulatedOrder, actionCode: number): void {
    order.status = OrderStatus.declined;
    order.actionCode = actionCode;
    this.onEvent({ order, operation: 'declined', success: false });
  }

  private saveCard(order: SimulatedOrder, clientId: string): void {
    const binding: SimulatedBinding = { bindingId: randomUUID(), clientId, sourceOrderId: order.orderId, declinesQueued: 0 };
    this.bindings.set(binding.bindingId, binding);
    order.bindingId = binding.bindingId;
  }

  private expireIfDue(order: SimulatedOrder): void {
    if (order.status === OrderStatus.registered && this.now() >= order.expiresAt) this.expire(order);
  }
}

function parseBundle(raw: string | undefined): SimulatedOrder['receiptItems'] | null {
  if (!raw) return [];
  try {
    const items = (JSON.parse(raw) as Partial<OrderBundle>).cartItems?.items;
    return Array.isArray(items) ? items : null;
  } catch {
    return null;
  }
}

function parseMethod(raw: string | undefined): PaymentMethod {
  return parseJsonParams(raw).method === 'sbp' ? 'sbp' : 'card';
}

/** `jsonParams`: the merchant's extra attributes, a flat JSON object; anything unreadable is none. */
function parseJsonParams(raw: string | undefined): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(raw ?? '{}');
    return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
