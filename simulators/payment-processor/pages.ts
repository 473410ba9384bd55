import type { PageLanguage } from '../../db/payments/processor/language';
import type { SimulatedOrder } from './orders';

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

export function paymentPage(order: SimulatedOrder, previousDeclined: boolean): string {
  const t = texts[order.language];
  const buttons = (Object.keys(t.outcomes) as (keyof typeof t.outcomes)[])
    .map((outcome) => `<button type="submit" name="outcome" value="${outcome}">${t.outcomes[outcome]}</button>`)
    .join('\n');
  return page(order.language, t.payTitle, `
<p>${escapeHtml(order.description)}</p>
<p>${t.amount}: <strong>${money(order.amount, order.language)}</strong></p>
<p>${t.method[order.method]}</p>
${previousDeclined ? `<p class="declined">${t.previousDeclined}</p>` : ''}
<p><em>${t.testContour}</em></p>
<form method="post">
${buttons}
</form>`);
}

export function noticePage(language: PageLanguage, kind: NoticeKind): string {
  const t = texts[language];
  return page(language, t.payTitle, `<p>${t[kind]}</p>`);
}

export function receiptPage(order: SimulatedOrder): string {
  const t = texts[order.language];
  const rows = order.receiptItems
    .map((item) => `<tr><td>${escapeHtml(item.name)}</td><td>${item.quantity.value}</td><td>${money(item.itemPrice, order.language)}</td></tr>`)
    .join('\n');
  return page(order.language, t.receiptTitle, `
<table>
<tr><th>${t.item}</th><th>${t.quantity}</th><th>${t.price}</th></tr>
${rows}
</table>
<p>${t.total}: <strong>${money(order.amount, order.language)}</strong></p>
<p>${t.paidAt}: ${order.depositedAt?.toISOString() ?? ''}</p>`);
}

export function orderNotFoundPage(): string {
  return page('en', 'Order not found', '<p>Order not found. Заказ не найден.</p>');
}

function page(language: PageLanguage, title: string, body: string): string {
  return `<!doctype html>
<html lang="${language}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${title}</title></head>
<body>
<h1>${title}</h1>${body}
</body>
</html>
`;
}

function money(minor: number, language: PageLanguage): string {
  const amount = (minor / 100).toFixed(2);
  return language === 'ru' ? `${amount.replace('.', ',')} ₽` : `RUB ${amount}`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
