import type { PaymentMethod } from '../../common/payment-method';

/**
 * What the payments code needs from the external payment processor. The HTTP client speaks to the
 * real processor and to the built-in simulator alike.
 */


/** Our view of an order at the processor, in the words of the contract's payment states. */
export type ProcessorState = 'created' | 'succeeded' | 'failed' | 'expired' | 'refunded';

export interface OrderRegistration {
  /** Our payment id; the processor keeps it as the order number. */
  paymentId: string;
  amountMinor: number;
  currency: 643;
  description: string;
  /** The profile locale; the payment page language is derived from it. */
  locale: string;
  method: PaymentMethod;
  returnUrl: string;
  failUrl: string;
  receipt: { itemName: string; quantity: number; priceMinor: number };
  /**
   * Our customer id at the processor (the user id), for orders of a subscription: the card a paid
   * order saves belongs to it, and only its orders may be charged with that card.
   */
  clientId?: string;
  /** Ask the processor to save the card when the order is paid (a subscription's first period). */
  saveCard?: boolean;
}

export interface RegisteredOrder {
  orderId: string;
  paymentUrl: string;
}

export interface ProcessorOrder {
  orderId: string;
  paymentId: string;
  state: ProcessorState;
  amountMinor: number;
  paidAt: Date | null;
  receiptUrl: string | null;
  /** The saved card (binding) the order left or was charged with, if any. */
  bindingId: string | null;
}

/** A server-to-server charge of a saved card for a registered order: no payer, no page. */
export interface BindingCharge {
  orderId: string;
  bindingId: string;
}

export const notificationOperations = ['approved', 'deposited', 'declined', 'declinedByTimeout', 'reversed', 'refunded', 'chargeback'] as const;
export type NotificationOperation = (typeof notificationOperations)[number];

/**
 * A callback whose signature checked out. It says which order moved; the order's state is still
 * to be read with `getOrder`, the processor's status answer being the source of truth.
 */
export interface VerifiedNotification {
  orderId: string;
  paymentId: string;
  operation: NotificationOperation;
  success: boolean;
}

export interface PaymentProcessor {
  /** Throws `ProcessorRejectedError` when the processor refuses, `ProcessorUnavailableError` when it cannot be reached. */
  registerOrder(order: OrderRegistration): Promise<RegisteredOrder>;
  /** Throws `ProcessorRejectedError` when the processor refuses the query (unknown order), `ProcessorUnavailableError` otherwise. */
  getOrder(orderId: string): Promise<ProcessorOrder>;
  /**
   * Charges the saved card for the order at once: `charged` or `declined` (the issuer said no).
   * Throws `ProcessorRejectedError` when the processor refuses the request itself (unknown card or
   * order, an order already paid or tried), `ProcessorUnavailableError` when it cannot be reached:
   * the order's status then tells what happened.
   */
  chargeBinding(charge: BindingCharge): Promise<'charged' | 'declined'>;
  /** The callback's parameters when its checksum is valid and its fields are complete, else null. */
  verifyNotification(params: Record<string, string>): VerifiedNotification | null;
}
