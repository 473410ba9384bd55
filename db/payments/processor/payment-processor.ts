/**
 * What the payments code needs from the external payment processor. The HTTP client speaks to the
 * real processor and to the built-in simulator alike.
 */

export type PaymentMethod = 'card' | 'sbp';

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
  /** The callback's parameters when its checksum is valid and its fields are complete, else null. */
  verifyNotification(params: Record<string, string>): VerifiedNotification | null;
}
