import type { Knex } from 'knex';

/**
 * The demo showcase (docs/mobile.md, "The demo catalog: what to try") and its special offer, seeded once into an empty
 * database at start. An advisory lock serialises processes starting together; a table that already
 * has rows is left alone, so an operator's changes (a pack switched off, a new price) survive restarts.
 */
const products = [
  { code: 'pack_100', title_ru: '100 кредитов', title_en: '100 credits', credits: 100, price_minor: 14900, badge: null, position: 0, purchase_limit: null, offer_only: false },
  { code: 'pack_500', title_ru: '500 кредитов', title_en: '500 credits', credits: 500, price_minor: 59900, badge: 'popular', position: 1, purchase_limit: null, offer_only: false },
  { code: 'pack_1500', title_ru: '1500 кредитов', title_en: '1500 credits', credits: 1500, price_minor: 149000, badge: 'best_value', position: 2, purchase_limit: null, offer_only: false },
  { code: 'starter_pack', title_ru: 'Стартовый пакет: 300 кредитов', title_en: 'Starter pack: 300 credits', credits: 300, price_minor: 9900, badge: 'once', position: 3, purchase_limit: 1, offer_only: false },
  // Sold only through `paywall_discount`, once per account.
  { code: 'offer_pack_400', title_ru: 'Специальное предложение: 400 кредитов', title_en: 'Special offer: 400 credits', credits: 400, price_minor: 19900, badge: null, position: 100, purchase_limit: 1, offer_only: true },
];

const offers = [
  { code: 'paywall_discount', product_code: 'offer_pack_400', window_seconds: 2 * 3600, max_issues_per_account: 1, position: 0 },
];

const seedLock = 'seed:payment-showcase';

/** Returns true when it seeded something. */
export async function seedPaymentShowcase(db: Knex): Promise<boolean> {
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [seedLock]);
    let seeded = false;
    if (await isEmpty(trx, 'payment_products')) {
      await trx('payment_products').insert(products.map((product) => ({ ...product, currency: 643, enabled: true })));
      seeded = true;
    }
    if (await isEmpty(trx, 'offers')) {
      for (const offer of offers) {
        const { product_code: productCode, ...fields } = offer;
        const product = await trx('payment_products').where({ code: productCode }).first<{ id: string } | undefined>('id');
        if (!product) continue;
        await trx('offers').insert({ ...fields, product_id: product.id, enabled: true });
        seeded = true;
      }
    }
    return seeded;
  });
}

async function isEmpty(trx: Knex.Transaction, table: string): Promise<boolean> {
  return (await trx(table).first('id')) === undefined;
}
