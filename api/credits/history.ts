import type { Knex } from 'knex';
import type { CreditKind } from '../../db/credits/ledger';
import { page } from '../http/paging';
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

export async function balanceOf(db: Knex, userId: string): Promise<number> {
  const row = await db('users').where({ id: userId }).first('balance');
  return row?.balance ?? 0;
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
