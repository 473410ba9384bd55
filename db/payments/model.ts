import type { PaymentMethod } from '../../common/payment-method';

/** Rows of the payments domain and what a status change announces, in one place. */

export type PaymentStatus = 'created' | 'succeeded' | 'failed' | 'expired' | 'refunded';

/** Terminal in the contract's sense: the stream closes and refresh answers as is. */
export const terminalStatuses: readonly PaymentStatus[] = ['succeeded', 'refunded'];

export interface ProductRow {
  id: string;
  code: string;
  title_ru: string;
  title_en: string;
  price_minor: number;
  currency: number;
  credits: number;
  badge: string | null;
  position: number;
  enabled: boolean;
  purchase_limit: number | null;
  offer_only: boolean;
}

export interface PaymentRow {
  id: string;
  user_id: string;
  /** What the payment sells: a pack (`product_id`) or a subscription plan (`plan_id`), never both. */
  product_id: string | null;
  plan_id: string | null;
  offer_issue_id: string | null;
  /** A subscription's payment: the period it pays and the charge attempt for it (1..3); null for a pack. */
  subscription_id: string | null;
  period: number | null;
  attempt: number | null;
  status: PaymentStatus;
  amount_minor: number;
  currency: number;
  credits: number;
  method: PaymentMethod;
  processor_order_id: string | null;
  payment_url: string | null;
  receipt_url: string | null;
  closed_reason: string | null;
  created_at: Date;
  expires_at: Date;
  paid_at: Date | null;
  refunded_at: Date | null;
  status_changed_at: Date;
  last_checked_at: Date | null;
  next_check_at: Date | null;
}

/** What a status change announces on `payment_status` (the payment stream shows it). */
export interface PaymentStatusEvent {
  id: string;
  user_id: string;
  status: PaymentStatus;
  paid_at: string | null;
}
