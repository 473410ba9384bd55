import type { Knex } from 'knex';

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

/** What payment `paymentId` sells. */
export async function soldItemOf(db: Knex, paymentId: string): Promise<SoldItem> {
  const { rows: [sold] } = await db.raw<{ rows: SoldItem[] }>(
    `select ${soldItemColumns()}
     from payments p
     join users u on u.id = p.user_id
     ${soldItemJoins}
     where p.id = ?`,
    [paymentId],
  );
  return sold;
}
