import type { PagePolicy } from '../../media/pages/headers';
import { html } from '../../media/pages/html';
import { renderPage, type PageIcon, type PageTone } from '../../media/pages/layout';
import type { SimulatedOrder } from './orders';
import type { Language } from '../../common/language';

/** The simulator's hosted pages: the payment page, its outcomes and the fiscal receipt. */

const texts = {
  ru: {
    payTitle: 'Оплата заказа',
    receiptTitle: 'Кассовый чек',
    amount: 'Сумма',
    method: { card: 'Банковская карта', sbp: 'СБП' },
    testContour: 'Тестовый контур: выберите, чем закончится оплата.',
    previousDeclined: 'Предыдущая попытка отклонена. Можно попробовать ещё раз.',
    outcomes: { success: 'Оплатить', insufficient_funds: 'Недостаточно средств', system_error: 'Системная ошибка', unknown: 'Банк не ответил' },
    alreadyPaid: 'Заказ уже оплачен.',
    expired: 'Время на оплату истекло.',
    notPayable: 'Этот заказ нельзя оплатить.',
    pending: 'Банк ещё не ответил. Результат оплаты придёт позже.',
    unknownOutcome: 'Неизвестный результат оплаты.',
    item: 'Наименование',
    quantity: 'Количество',
    price: 'Цена',
    total: 'Итого',
    paidAt: 'Оплачено',
  },
  en: {
    payTitle: 'Order payment',
    receiptTitle: 'Receipt',
    amount: 'Amount',
    method: { card: 'Bank card', sbp: 'Faster Payments System (SBP)' },
    testContour: 'Test contour: choose how the payment ends.',
    previousDeclined: 'The previous attempt was declined. You can try again.',
    outcomes: { success: 'Pay', insufficient_funds: 'Insufficient funds', system_error: 'System error', unknown: 'Bank does not answer' },
    alreadyPaid: 'This order is already paid.',
    expired: 'The payment session has expired.',
    notPayable: 'This order cannot be paid.',
    pending: 'The bank has not answered yet. The payment result will come later.',
    unknownOutcome: 'Unknown payment outcome.',
    item: 'Item',
    quantity: 'Quantity',
    price: 'Price',
    total: 'Total',
    paidAt: 'Paid',
  },
} as const;

export type NoticeKind = 'alreadyPaid' | 'expired' | 'notPayable' | 'pending' | 'unknownOutcome';

const noticeLooks: Record<NoticeKind, { icon: PageIcon; tone: PageTone }> = {
  alreadyPaid: { icon: 'success', tone: 'ok' },
  expired: { icon: 'unknown', tone: 'wait' },
  notPayable: { icon: 'failure', tone: 'bad' },
  pending: { icon: 'unknown', tone: 'wait' },
  unknownOutcome: { icon: 'failure', tone: 'bad' },
};

export function paymentPage(order: SimulatedOrder, previousDeclined: boolean): string {
  const t = texts[order.language];
  const buttons = (Object.keys(t.outcomes) as (keyof typeof t.outcomes)[])
    .map((outcome, index) => html`<button class="${index === 0 ? 'button' : 'button secondary'}" type="submit" name="outcome" value="${outcome}">${t.outcomes[outcome]}</button>`);
  return renderPage({
    language: order.language,
    title: t.payTitle,
    icon: 'card',
    body: html`<p>${order.description}</p>
<p>${t.amount}: <strong>${money(order.amount, order.language)}</strong></p>
<p>${t.method[order.method]}</p>
${previousDeclined ? html`<p class="notice">${t.previousDeclined}</p>` : ''}
<p class="hint">${t.testContour}</p>
<form method="post">
${buttons}
</form>`,
  });
}

/**
 * The payment page's form posts to the page itself, which redirects the payer to the order's return
 * or fail URL: the policy allows those origins as form targets (browsers check the redirect too).
 */
export function paymentPagePolicy(order: SimulatedOrder): PagePolicy {
  const origins = [order.returnUrl, order.failUrl].flatMap((link) => {
    try {
      return [new URL(link).origin];
    } catch {
      return [];
    }
  });
  return { formAction: ["'self'", ...new Set(origins)] };
}

export function noticePage(language: Language, kind: NoticeKind): string {
  const t = texts[language];
  return renderPage({ language, title: t.payTitle, ...noticeLooks[kind], body: html`<p>${t[kind]}</p>` });
}

export function receiptPage(order: SimulatedOrder): string {
  const t = texts[order.language];
  const rows = order.receiptItems.map((item) => html`<tr><td>${item.name}</td><td class="number">${item.quantity.value}</td><td class="number">${money(item.itemPrice, order.language)}</td></tr>`);
  return renderPage({
    language: order.language,
    title: t.receiptTitle,
    icon: 'receipt',
    body: html`<table>
<tr><th>${t.item}</th><th class="number">${t.quantity}</th><th class="number">${t.price}</th></tr>
${rows}
</table>
<p>${t.total}: <strong>${money(order.amount, order.language)}</strong></p>
<p>${t.paidAt}: ${order.depositedAt?.toISOString() ?? ''}</p>`,
  });
}

export function orderNotFoundPage(): string {
  return renderPage({ language: 'en', title: 'Order not found', icon: 'unknown', tone: 'wait', body: html`<p>Order not found. Заказ не найден.</p>` });
}

function money(minor: number, language: Language): string {
  const amount = (minor / 100).toFixed(2);
  return language === 'ru' ? `${amount.replace('.', ',')} ₽` : `RUB ${amount}`;
}
