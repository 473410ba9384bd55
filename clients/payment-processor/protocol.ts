/**
 * The processor's wire vocabulary (modelled on the common Russian acquiring REST API), shared by the
 * HTTP client and the simulator so both speak exactly the same dialect.
 */

export const OrderStatus = {
  registered: 0,
  /** Two-stage payments only: funds held, not captured. */
  preAuthorized: 1,
  deposited: 2,
  reversed: 3,
  refunded: 4,
  /** 3-D Secure authentication under way. */
  acsAuthorization: 5,
  declined: 6,
} as const;
export type OrderStatusCode = (typeof OrderStatus)[keyof typeof OrderStatus];

/** ISO 8583 (1993) action codes, plus the processor's own negative ones. */
export const ActionCode = {
  approved: 0,
  noPaymentAttempts: -100,
  insufficientFunds: 116,
  systemMalfunction: 909,
  issuerTimedOut: 911,
  sessionExpired: -2007,
} as const;

/** `errorCode` values of register.do and getOrderStatusExtended.do; "0" means no error. */
export const ErrorCode = {
  none: '0',
  duplicateOrderNumber: '1',
  unknownCurrency: '3',
  missingParameter: '4',
  /** Also what wrong credentials get. */
  invalidParameter: '5',
  orderNotFound: '6',
} as const;

/** `errorCode` values of paymentOrderBinding.do beyond "0" (charged). */
export const BindingErrorCode = {
  /** The issuer declined the charge; the order is declined. */
  declined: '2',
  /** The order cannot be charged (already paid or tried, or not this client's card). */
  notAllowed: '7',
  bindingNotFound: '8',
} as const;

export const CURRENCY_RUB = 643;
export const SESSION_TIMEOUT_SECS = 1800;

/** The fiscal receipt sent as `orderBundle`. */
export interface OrderBundle {
  cartItems: {
    items: {
      positionId: string;
      name: string;
      quantity: { value: number; measure: string };
      itemPrice: number;
      itemAmount: number;
      tax: { taxType: number };
    }[];
  };
}

export interface RegisterAnswer {
  orderId?: string;
  formUrl?: string;
  errorCode?: string;
  errorMessage?: string;
}

export interface OrderStatusAnswer {
  errorCode?: string;
  errorMessage?: string;
  orderNumber?: string;
  orderStatus?: number;
  actionCode?: number;
  actionCodeDescription?: string;
  amount?: number;
  currency?: string;
  /** Epoch milliseconds. */
  depositedDate?: number;
  refundedAmount?: number;
  chargeback?: boolean;
  receiptUrl?: string;
  /** The saved card of an order registered with a `clientId` (and paid with the card saved, or charged with it). */
  bindingInfo?: { clientId?: string; bindingId?: string };
}

export interface PaymentBindingAnswer {
  errorCode?: string;
  errorMessage?: string;
  /** Where a payer would be sent; unused server-to-server. */
  redirect?: string;
}
