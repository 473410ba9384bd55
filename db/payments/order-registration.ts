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
  const { rows: [sold] } = await db.raw<{ rows: { title_ru: string; title_en: string; locale: string }[] }>(
    `select coalesce(pp.title_ru, sp.title_ru) as title_ru, coalesce(pp.title_en, sp.title_en) as title_en, u.locale
     from payments p
     join users u on u.id = p.user_id
     left join payment_products pp on pp.id = p.product_id
     left join subscription_plans sp on sp.id = p.plan_id
     where p.id = ?`,
    [payment.id],
  );
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
