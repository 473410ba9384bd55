import type { Knex } from 'knex';
import { planCreditsOf, type CreditKind } from '../../db/credits/ledger';
import { page } from '../http/paging';
import { schema } from '../../common/validation';
import type { Page, Paging } from '../http/paging';

/** One row of `GET /v1/credits/transactions`; `amount` is signed. */
export interface TransactionView {
  id: string;
  kind: CreditKind;
  amount: number;
  balance_after: number;
  reference: string;
  created_at: string;
}

/** `GET /v1/credits/balance` and the balance fields of User: the whole balance, and the plan credits inside it. */
export interface BalanceView {
  balance: number;
  plan_credits: number;
  /** When the plan credits burn: the live subscription period's end; null without one. */
  plan_expires_at: string | null;
}

export const balanceProperties = {
  balance: schema.integer(),
  plan_credits: schema.integer(),
  plan_expires_at: schema.nullable(schema.string({ format: 'date-time' })),
};

export async function balanceOf(db: Knex, userId: string): Promise<BalanceView> {
  const [row, plan] = await Promise.all([db('users').where({ id: userId }).first('balance'), planCreditsOf(db, userId)]);
  return { balance: row?.balance ?? 0, plan_credits: plan.credits, plan_expires_at: plan.expiresAt?.toISOString() ?? null };
}

/** The user's credit history, newest first. */
export async function transactionsPage(db: Knex, userId: string, paging: Paging): Promise<Page<TransactionView>> {
  const [rows, [{ total }]] = await Promise.all([
    db('credit_transactions')
      .where({ user_id: userId })
      .orderBy('seq', 'desc')
      .limit(paging.limit)
      .offset(paging.offset)
      .select('id', 'kind', 'amount', 'balance_after', 'reference', 'created_at'),
    db('credit_transactions').where({ user_id: userId }).count<{ total: number }[]>('* as total'),
  ]);
  const items = rows.map((row) => ({ ...row, created_at: (row.created_at as Date).toISOString() }));
  return page(items, total, paging);
}
