import type { Knex } from 'knex';
import type { PaymentRow, PaymentStatus } from '../../db/payments/model';
import type { PaymentMethod } from '../../common/payment-method';
import { isUuid } from '../../common/validation';

/** Payment of the contract; `payment_url` only in the answer to `POST /v1/payments` (and `POST /v1/subscriptions`). */
export interface PaymentView {
  id: string;
  status: PaymentStatus;
  product_id: string;
  amount_minor: number;
  currency: number;
  credits: number;
  method: PaymentMethod;
  created_at: string;
  paid_at: string | null;
  receipt_url: string | null;
  payment_url?: string;
}

/** The caller's own payment; null for an absent one, another user's, or an id that is no UUID. */
export async function findOwnPayment(db: Knex, userId: string, paymentId: string): Promise<PaymentRow | null> {
  if (!isUuid(paymentId)) return null;
  const row = await db('payments').where({ id: paymentId, user_id: userId }).first<PaymentRow | undefined>('*');
  return row ?? null;
}

/** The contract's Payment. `receipt_url` appears from `succeeded` on; `payment_url` only when asked. */
export function paymentView(row: PaymentRow, paymentUrl?: string): PaymentView {
  const paid = row.status === 'succeeded' || row.status === 'refunded';
  return {
    id: row.id,
    status: row.status,
    // A subscription's payment sells its plan: the plan id stands where a pack's id would.
    product_id: (row.product_id ?? row.plan_id)!,
    amount_minor: row.amount_minor,
    currency: row.currency,
    credits: row.credits,
    method: row.method,
    created_at: row.created_at.toISOString(),
    paid_at: row.paid_at?.toISOString() ?? null,
    receipt_url: paid ? row.receipt_url : null,
    ...(paymentUrl === undefined ? {} : { payment_url: paymentUrl }),
  };
}
