import type { Knex } from 'knex';
import { languageOf } from '../accounts/user-locale';
import type { PaymentRow } from './model';
import type { OrderRegistration } from './processor/payment-processor';
import { CURRENCY_RUB } from './processor/protocol';

/**
 * What the processor is told about a payment's order: the title of the pack or plan in the payer's
 * language (the page speaks it), the fiscal receipt (always in Russian), the payer's return and fail
 * pages. A subscription's orders carry the user as the processor's client: the first one asks to
 * save the card, the later ones are charged with it.
 */
export async function orderRegistrationOf(db: Knex, publicBaseUrl: string, payment: PaymentRow): Promise<OrderRegistration> {
  const { rows: [sold] } = await db.raw<{ rows: SoldItem[] }>(
    `select ${soldItemColumns()}
     from payments p
     join users u on u.id = p.user_id
     ${soldItemJoins}
     where p.id = ?`,
    [payment.id],
  );
  return orderRegistration(publicBaseUrl, payment, sold);
}

/** What a payment sells, as the registration names it: the titles of its pack or plan and the payer's locale. */
export interface SoldItem {
  title_ru: string;
  title_en: string;
  locale: string;
}

/** `SoldItem`'s columns (named with `prefix`) over `payments p` joined to `users u` and `soldItemJoins`, for a read that wants them beside others. */
export function soldItemColumns(prefix = ''): string {
  return `coalesce(pp.title_ru, sp.title_ru) as ${prefix}title_ru, coalesce(pp.title_en, sp.title_en) as ${prefix}title_en, u.locale as ${prefix}locale`;
}
export const soldItemJoins = `left join payment_products pp on pp.id = p.product_id
     left join subscription_plans sp on sp.id = p.plan_id`;

export function orderRegistration(publicBaseUrl: string, payment: PaymentRow, sold: SoldItem): OrderRegistration {
  const pagesBase = `${publicBaseUrl}/v1/payments/${payment.id}`;
  return {
    paymentId: payment.id,
    amountMinor: payment.amount_minor,
    currency: CURRENCY_RUB,
    description: languageOf(sold.locale) === 'en' ? sold.title_en : sold.title_ru,
    locale: sold.locale,
    method: payment.method,
    returnUrl: `${pagesBase}/return`,
    failUrl: `${pagesBase}/fail`,
    receipt: { itemName: sold.title_ru, quantity: 1, priceMinor: payment.amount_minor },
    ...(payment.subscription_id ? { clientId: payment.user_id, saveCard: payment.period === 1 } : {}),
  };
}
