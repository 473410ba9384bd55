import type { Knex } from 'knex';
import { html } from '../../media/pages/html';
import { consolePage, relativeTime, table, utcTime } from './view';

/**
 * Payments that need an operator's eye: `created` ones older than `stuckAfterS`, each with why it
 * is still open. `no order`: the processor never confirmed the registration (the outcome of that
 * call is unknown; reconciliation closes it after an hour). `past expiry`: the payer's time is over
 * and the processor has not said how it ended (an issuer that never answered). `check overdue`:
 * reconciliation has not asked the processor when it should have (the scheduler is down or the
 * processor silent). `waiting`: the payer may still pay. Read through `payments_open`.
 */
const stuckAfterS = 15 * 60;
const overdueAfterS = 5 * 60;
const listed = 100;

export type OpenReason = 'no_order' | 'past_expiry' | 'check_overdue' | 'waiting';

export interface OpenPayment {
  id: string;
  user_id: string;
  amount_minor: number;
  method: string;
  processor_order_id: string | null;
  subscription_id: string | null;
  created_at: Date;
  expires_at: Date;
  last_checked_at: Date | null;
  next_check_at: Date | null;
  reason: OpenReason;
}

export async function readOpenPayments(db: Knex): Promise<{ total: number; payments: OpenPayment[] }> {
  const { rows } = await db.raw<{ rows: (OpenPayment & { total: number })[] }>(
    `select id, user_id, amount_minor, method, processor_order_id, subscription_id, created_at, expires_at,
       last_checked_at, next_check_at,
       case when processor_order_id is null then 'no_order'
         when expires_at < now() then 'past_expiry'
         when next_check_at < now() - :overdue * interval '1 second' then 'check_overdue'
         else 'waiting' end as reason,
       count(*) over ()::int as total
     from payments
     where status = 'created' and created_at < now() - :stuck * interval '1 second'
     order by created_at limit :listed`,
    { stuck: stuckAfterS, overdue: overdueAfterS, listed },
  );
  return { total: rows[0]?.total ?? 0, payments: rows.map(({ total: _total, ...payment }) => payment) };
}

const reasonText: Record<OpenReason, { text: string; tone: string }> = {
  no_order: { text: 'no order registered', tone: 'bad' },
  past_expiry: { text: 'outcome unknown past expiry', tone: 'bad' },
  check_overdue: { text: 'status check overdue', tone: 'wait' },
  waiting: { text: 'waiting for the payer', tone: '' },
};

function rubles(minor: number): string {
  return `${(minor / 100).toFixed(2)} ₽`;
}

export function paymentsPage(open: { total: number; payments: OpenPayment[] }): string {
  const rows = open.payments.map((payment) => html`<tr data-payment="${payment.id}">
<td class="mono">${payment.id}</td>
<td><span class="tag ${reasonText[payment.reason].tone}">${reasonText[payment.reason].text}</span></td>
<td class="number">${rubles(payment.amount_minor)}</td><td>${payment.method}${payment.subscription_id ? ' (subscription)' : ''}</td>
<td class="mono">${payment.processor_order_id ?? '—'}</td>
<td>${utcTime(payment.created_at)} (${relativeTime(payment.created_at)})</td><td>${utcTime(payment.expires_at)}</td>
<td>${relativeTime(payment.last_checked_at)}</td><td>${relativeTime(payment.next_check_at)}</td>
<td class="mono">${payment.user_id}</td>
</tr>`);
  const counts = (reason: OpenReason) => open.payments.filter((payment) => payment.reason === reason).length;
  return consolePage('/ops/payments', 'Payments that need attention', html`<div class="figures">
<div class="figure${open.total ? ' bad' : ''}"><strong id="payments-open">${open.total}</strong>open longer than ${stuckAfterS / 60} min</div>
<div class="figure"><strong>${counts('past_expiry')}</strong>outcome unknown past expiry</div>
<div class="figure"><strong>${counts('no_order')}</strong>no order registered</div>
<div class="figure"><strong>${counts('check_overdue')}</strong>status check overdue</div>
</div>
${table(html`<tr><th>payment</th><th>why open</th><th class="number">amount</th><th>method</th><th>processor order</th><th>created</th><th>expires</th><th>last checked</th><th>next check</th><th>user</th></tr>`, rows, `No payment has been open longer than ${stuckAfterS / 60} minutes.`)}
<p class="hint">The processor's answer decides every payment: reconciliation (the scheduler role) asks it on each payment's next check, the webhook and the app's refresh too. The oldest ${listed} are listed.</p>`);
}
