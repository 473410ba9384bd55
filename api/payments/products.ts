import type { Knex } from 'knex';
import { languageOf, type Language } from '../../common/language';
import { userLocale } from '../../db/accounts/user-locale';
import type { ProductRow } from '../../db/payments/model';
import { schema } from '../../common/validation';

/** Payment product of the contract. */
export interface ProductView {
  id: string;
  code: string;
  title: string;
  price_minor: number;
  credits: number;
  badge: string | null;
}

/** The schema of a product's fields, which an offer's product extends. */
export const productProperties = {
  id: schema.uuid(),
  code: schema.string(),
  title: schema.string(),
  price_minor: schema.integer(),
  credits: schema.integer(),
  badge: schema.nullable(schema.string()),
};

/** The operator's showcase: enabled packs that are sold directly, in showcase order. */
export async function showcase(db: Knex): Promise<ProductRow[]> {
  return db('payment_products')
    .where({ enabled: true, offer_only: false })
    .orderBy([{ column: 'position' }, { column: 'created_at' }, { column: 'code' }])
    .select<ProductRow[]>('*');
}

/** A pack payments may be created for: present and switched on (offer-only packs included). */
export async function findPurchasableProduct(db: Knex, productId: string): Promise<ProductRow | null> {
  const row = await db('payment_products').where({ id: productId, enabled: true }).first<ProductRow | undefined>('*');
  return row ?? null;
}

/** The Product of the contract, also inside an Offer. */
export const productSchema = schema.response(productProperties, { title: 'Product' });

export function productView(row: ProductRow, language: Language): ProductView {
  return {
    id: row.id,
    code: row.code,
    title: language === 'en' ? row.title_en : row.title_ru,
    price_minor: row.price_minor,
    credits: row.credits,
    badge: row.badge,
  };
}

/** The caller's profile locale, which picks titles and the payment page language. */
export async function profileLocale(db: Knex, userId: string): Promise<string> {
  return (await userLocale(db, userId)) ?? 'ru';
}

export async function profileLanguage(db: Knex, userId: string): Promise<Language> {
  return languageOf(await profileLocale(db, userId));
}
