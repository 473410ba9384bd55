import { caller } from '../http/authentication';
import { pageSchema, pagingProperties, type Paging } from '../http/paging';
import { readBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../http/validation';
import { balanceOf, transactionsPage } from './history';

const transactionSchema = schema.response({
  id: schema.uuid(),
  kind: schema.string(),
  amount: schema.integer(),
  balance_after: schema.integer(),
  reference: schema.string(),
  created_at: schema.string({ format: 'date-time' }),
}, { title: 'CreditTransaction' });

const balanceSchema = schema.response({
  balance: schema.integer(),
  plan_credits: schema.integer(),
  plan_expires_at: schema.nullable(schema.string({ format: 'date-time' })),
}, { title: 'Balance' });

export const creditRoutes = [
  defineRoute({
    method: 'GET', path: '/v1/credits/balance', access: 'token', limits: [readBudget()],
    summary: 'The balance; plan credits stay 0 and plan_expires_at null until subscriptions exist.',
    responses: { 200: { description: 'Balance', schema: balanceSchema } },
    handler: async (ctx) => {
      ctx.body = { balance: await balanceOf(ctx.services.db, caller(ctx).id), plan_credits: 0, plan_expires_at: null };
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
