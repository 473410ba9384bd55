import { ProcessorRejectedError, ProcessorUnavailableError, type ProcessorCall } from './errors';
import { notificationOperations, type BindingCharge, type NotificationOperation, type OrderRegistration, type PaymentProcessor, type ProcessorOrder, type RegisteredOrder, type VerifiedNotification } from './payment-processor';
import { BindingErrorCode, ErrorCode, SESSION_TIMEOUT_SECS, type OrderBundle, type OrderStatusAnswer, type PaymentBindingAnswer, type RegisterAnswer } from './protocol';
import { hasValidChecksum } from './signature';
import { processorState } from './state-mapping';
import { CircuitOpenError, type Circuit } from '../../common/circuit';
import { languageOf } from '../../common/language';
import { exchange, isSuccess } from '../outbound-http';

export interface ProcessorClientSettings {
  /** Base of the processor API, e.g. `https://pay.example/payment/rest` or the simulator's `{PUBLIC_BASE_URL}/sim/processor`. */
  baseUrl: string;
  userName: string;
  password: string;
  notificationSecret: string;
  /** How long the order's payment page stays open (`sessionTimeoutSecs` at registration); the processor's own default when unset. */
  sessionTimeoutS?: number;
  timeouts?: { registerMs?: number; statusMs?: number; chargeMs?: number };
  /** Every call goes through it: a processor that is down is refused at once (`ProcessorUnavailableError`), not after a timeout. */
  circuit: Circuit;
}

/** The contract allows payment creation about 10 s, so registration must give up before that. */
const DEFAULT_REGISTER_TIMEOUT_MS = 8000;
const DEFAULT_STATUS_TIMEOUT_MS = 5000;
const DEFAULT_CHARGE_TIMEOUT_MS = 10_000;
/** The processor's answers are a few hundred bytes; a longer one is not read whole. */
const maxAnswerBytes = 1024 * 1024;

// Digital goods are sold without VAT ("без НДС"); a different tax regime needs a setting here.
const RECEIPT_TAX_TYPE = 0;

/** The processor's REST API over HTTP: form-encoded requests, JSON answers. */
export class ProcessorClient implements PaymentProcessor {
  private readonly baseUrl: string;
  private readonly registerTimeoutMs: number;
  private readonly statusTimeoutMs: number;
  private readonly chargeTimeoutMs: number;

  constructor(private readonly settings: ProcessorClientSettings) {
    this.baseUrl = settings.baseUrl.replace(/\/+$/, '');
    this.registerTimeoutMs = settings.timeouts?.registerMs ?? DEFAULT_REGISTER_TIMEOUT_MS;
    this.statusTimeoutMs = settings.timeouts?.statusMs ?? DEFAULT_STATUS_TIMEOUT_MS;
    this.chargeTimeoutMs = settings.timeouts?.chargeMs ?? DEFAULT_CHARGE_TIMEOUT_MS;
  }

  async registerOrder(order: OrderRegistration): Promise<RegisteredOrder> {
    const { receipt } = order;
    const bundle: OrderBundle = {
      cartItems: {
        items: [{
          positionId: '1',
          name: receipt.itemName,
          quantity: { value: receipt.quantity, measure: 'шт' },
          itemPrice: receipt.priceMinor,
          itemAmount: receipt.priceMinor * receipt.quantity,
          tax: { taxType: RECEIPT_TAX_TYPE },
        }],
      },
    };
    const answer = await this.call<RegisterAnswer>('register', 'register.do', {
      orderNumber: order.paymentId,
      amount: String(order.amountMinor),
      currency: String(order.currency),
      returnUrl: order.returnUrl,
      failUrl: order.failUrl,
      description: order.description,
      language: languageOf(order.locale),
      sessionTimeoutSecs: String(this.settings.sessionTimeoutS ?? SESSION_TIMEOUT_SECS),
      orderBundle: JSON.stringify(bundle),
      jsonParams: JSON.stringify({ method: order.method, ...(order.saveCard ? { save_card: 'true' } : {}) }),
      ...(order.clientId ? { clientId: order.clientId } : {}),
    }, this.registerTimeoutMs);
    if (!isNonEmptyString(answer.orderId) || !isNonEmptyString(answer.formUrl)) {
      throw new ProcessorUnavailableError('register', 'answer without orderId or formUrl');
    }
    return { orderId: answer.orderId, paymentUrl: answer.formUrl };
  }

  async getOrder(orderId: string): Promise<ProcessorOrder> {
    const answer = await this.call<OrderStatusAnswer>('status', 'getOrderStatusExtended.do', { orderId }, this.statusTimeoutMs);
    const status = integer(answer.orderStatus);
    const actionCode = integer(answer.actionCode);
    const amount = integer(answer.amount);
    if (!isNonEmptyString(answer.orderNumber) || status === null || actionCode === null || amount === null) {
      throw new ProcessorUnavailableError('status', 'answer without orderNumber, orderStatus, actionCode or amount');
    }
    const state = processorState(status, actionCode, answer.chargeback === true);
    if (state === null) throw new ProcessorUnavailableError('status', `unexpected orderStatus ${status}`);
    const depositedAt = integer(answer.depositedDate);
    return {
      orderId,
      paymentId: answer.orderNumber,
      state,
      amountMinor: amount,
      paidAt: depositedAt === null ? null : new Date(depositedAt),
      receiptUrl: isNonEmptyString(answer.receiptUrl) ? answer.receiptUrl : null,
      bindingId: isNonEmptyString(answer.bindingInfo?.bindingId) ? answer.bindingInfo.bindingId : null,
    };
  }

  async chargeBinding(charge: BindingCharge): Promise<'charged' | 'declined'> {
    try {
      await this.call<PaymentBindingAnswer>('charge', 'paymentOrderBinding.do', { mdOrder: charge.orderId, bindingId: charge.bindingId }, this.chargeTimeoutMs);
      return 'charged';
    } catch (error) {
      if (error instanceof ProcessorRejectedError && error.code === BindingErrorCode.declined) return 'declined';
      throw error;
    }
  }

  verifyNotification(params: Record<string, string>): VerifiedNotification | null {
    if (!hasValidChecksum(params, this.settings.notificationSecret)) return null;
    const { mdOrder, orderNumber, operation, status } = params;
    if (!isNonEmptyString(mdOrder) || !isNonEmptyString(orderNumber) || !isOperation(operation)) return null;
    if (status !== '0' && status !== '1') return null;
    return { orderId: mdOrder, paymentId: orderNumber, operation, success: status === '1' };
  }

  /**
   * Errors in the body (`errorCode` other than "0") become `ProcessorRejectedError`; anything
   * unusable, or an open circuit, `ProcessorUnavailableError`. Only the unusable count against the
   * circuit: a refusal is an answer.
   */
  private async call<T extends { errorCode?: string; errorMessage?: string }>(
    call: ProcessorCall, method: string, params: Record<string, string>, timeoutMs: number,
  ): Promise<T> {
    let answer: object;
    try {
      answer = await this.settings.circuit.run(() => this.post(call, method, params, timeoutMs), (error) => error instanceof ProcessorUnavailableError);
    } catch (error) {
      if (error instanceof CircuitOpenError) throw new ProcessorUnavailableError(call, error.message, { cause: error });
      throw error;
    }
    const { errorCode, errorMessage } = answer as T;
    if (errorCode !== undefined && String(errorCode) !== ErrorCode.none) {
      throw new ProcessorRejectedError(call, String(errorCode), typeof errorMessage === 'string' ? errorMessage : '');
    }
    return answer as T;
  }

  /** One request: its JSON answer, or `ProcessorUnavailableError` for no answer, a non-2xx or an unreadable one. */
  private async post(call: ProcessorCall, method: string, params: Record<string, string>, timeoutMs: number): Promise<object> {
    const body = new URLSearchParams({ userName: this.settings.userName, password: this.settings.password, ...params });
    let answer: unknown;
    try {
      const response = await exchange(`${this.baseUrl}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: body.toString(),
        timeoutMs,
        maxBytes: maxAnswerBytes,
      });
      if (!isSuccess(response.status)) throw new ProcessorUnavailableError(call, `HTTP ${response.status}`);
      answer = JSON.parse(response.body.toString('utf8'));
    } catch (error) {
      if (error instanceof ProcessorUnavailableError) throw error;
      throw new ProcessorUnavailableError(call, (error as Error).message, { cause: error });
    }
    if (typeof answer !== 'object' || answer === null) throw new ProcessorUnavailableError(call, 'answer is not a JSON object');
    return answer;
  }
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function isOperation(value: unknown): value is NotificationOperation {
  return (notificationOperations as readonly unknown[]).includes(value);
}

/** An integer, also when it arrives as a numeric string. */
function integer(value: unknown): number | null {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) ? number : null;
}
