import type { Knex } from 'knex';
import type { PgBoss } from 'pg-boss';
import type { PaymentRow } from '../payments/model';
import { soldItemColumns, soldItemJoins, type SoldItem } from '../payments/sold-item';
import type { SubscriptionRow } from './model';

/** What the renewal job decides by: its payment, the subscription as it is now, and what the order sells. */
export interface RenewalCharge {
  payment: PaymentRow;
  subscription: Pick<SubscriptionRow, 'id' | 'status' | 'period' | 'cancel_at_period_end' | 'card_binding_id'> | null;
  sold: SoldItem;
}

/** One read for a batch of renewal jobs, each payment with all it needs; an unknown payment is absent. */
export async function renewalChargesOf(db: Knex, paymentIds: readonly string[]): Promise<Map<string, RenewalCharge>> {
  const { rows } = await db.raw<{ rows: (PaymentRow & Record<string, unknown>)[] }>(
    `select p.*,
       s.id as subscription__id, s.status as subscription__status, s.period as subscription__period,
       s.cancel_at_period_end as subscription__cancel_at_period_end, s.card_binding_id as subscription__card_binding_id,
       ${soldItemColumns('sold__')}
     from payments p
     join users u on u.id = p.user_id
     left join subscriptions s on s.id = p.subscription_id
     ${soldItemJoins}
     where p.id = any(?::uuid[])`,
    [[...paymentIds]],
  );
  return new Map(rows.map((row) => [row.id, renewalChargeOfRow(row)]));
}

function renewalChargeOfRow(row: PaymentRow & Record<string, unknown>): RenewalCharge {
  const payment: Record<string, unknown> = {};
  const subscription: Record<string, unknown> = {};
  const sold: Record<string, unknown> = {};
  for (const [column, value] of Object.entries(row)) {
    if (column.startsWith('subscription__')) subscription[column.slice('subscription__'.length)] = value;
    else if (column.startsWith('sold__')) sold[column.slice('sold__'.length)] = value;
    else payment[column] = value;
  }
  return {
    payment: payment as unknown as PaymentRow,
    subscription: subscription.id ? subscription as unknown as RenewalCharge['subscription'] : null,
    sold: sold as unknown as SoldItem,
  };
}

/** The states of a job that has still to end: waiting, waiting for a retry, or running. */
const unfinishedJobStates = ['created', 'retry', 'active'];

/**
 * A payment (null when absent), and whether it is a renewal charge whose job (its id is the
 * payment's, `workers/subscriptions/clock.ts`) has still to end: waiting, running or waiting for a
 * retry. While it has, the job applies the charge's outcome itself: it reads the order's status
 * right after the charge, and a retried one reads it before anything else. The job is asked of
 * pg-boss (`getJobById`) only for a renewal payment still open.
 */
export async function paymentWithRenewalJob(db: Knex, boss: PgBoss, paymentId: string): Promise<(PaymentRow & { renewal_job_pending: boolean }) | null> {
  const { rows: [payment] } = await db.raw<{ rows: PaymentRow[] }>('select * from payments where id = ?', [paymentId]);
  if (!payment) return null;
  const renewalOpen = payment.status === 'created' && payment.subscription_id !== null && (payment.period ?? 0) > 1;
  const job = renewalOpen ? await boss.getJobById('subscription-renew', paymentId) : null;
  return { ...payment, renewal_job_pending: job !== null && unfinishedJobStates.includes(job.state) };
}
