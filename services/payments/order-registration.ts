import type { Knex } from 'knex';
import type { OrderRegistration } from '../../clients/payment-processor/payment-processor';
import { CURRENCY_RUB } from '../../clients/payment-processor/protocol';
import { languageOf } from '../../common/language';
import type { PaymentRow } from '../../db/payments/model';
import { soldItemOf, type SoldItem } from '../../db/payments/sold-item';

/**
 * What the processor is told about a payment's order: the title of the pack or plan in the payer's
 * language (the page speaks it), the fiscal receipt (always in Russian), the payer's return and fail
 * pages. A subscription's orders carry the user as the processor's client: the first one asks to
 * save the card, the later ones are charged with it.
 */
export async function orderRegistrationOf(db: Knex, publicBaseUrl: string, payment: PaymentRow): Promise<OrderRegistration> {
  return orderRegistration(publicBaseUrl, payment, await soldItemOf(db, payment.id));
}

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
