import { caller } from '../http/authentication';
import { pageSchema, pagingProperties, type Paging } from '../http/paging';
import { readBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { balanceOf, balanceProperties, transactionsPage } from './history';

const transactionSchema = schema.response({
  id: schema.uuid(),
  kind: schema.string(),
  amount: schema.integer(),
  balance_after: schema.integer(),
  reference: schema.string(),
  created_at: schema.string({ format: 'date-time' }),
}, { title: 'CreditTransaction' });

const balanceSchema = schema.response(balanceProperties, { title: 'Balance' });

export const creditRoutes = [
  defineRoute({
    method: 'GET', path: '/v1/credits/balance', access: 'token', limits: [readBudget()],
    summary: 'The balance: `balance` is all of it; `plan_credits` the part a subscription period granted, which burns at `plan_expires_at` (null without a live period).',
    responses: { 200: { description: 'Balance', schema: balanceSchema } },
    handler: async (ctx) => {
      ctx.body = await balanceOf(ctx.services.db, caller(ctx).id);
    },
  }),
  defineRoute<unknown, Paging>({
    method: 'GET', path: '/v1/credits/transactions', access: 'token', limits: [readBudget()],
    summary: 'Credit history, newest first; one operation is one record with a signed amount.',
    query: schema.object(pagingProperties),
    responses: { 200: { description: 'Page of credit transactions', schema: pageSchema(transactionSchema, 'CreditTransactionPage') } },
    handler: async (ctx, { query }) => {
      ctx.body = await transactionsPage(ctx.services.db, caller(ctx).id, query);
    },
  }),
];
