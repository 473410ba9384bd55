import { caller } from '../http/authentication';
import { readBudget } from '../http/rate-limit';
import { defineRoute } from '../http/route';
import { schema } from '../../common/validation';
import { referralStats } from './referrals';

const referralSchema = schema.response({ code: schema.string(), link: schema.string(), invited: schema.integer(), credited: schema.integer(), earned: schema.integer() }, { title: 'ReferralStats' });

export const referralRoutes = [
  defineRoute({
    method: 'GET', path: '/v1/referral', access: 'registered', limits: [readBudget()],
    summary: 'Own referral code, share link and statistics; closed to guests.',
    responses: { 200: { description: 'Referral statistics', schema: referralSchema } },
    handler: async (ctx) => {
      ctx.body = await referralStats(ctx.services.db, ctx.services.config.linkBase, caller(ctx).id);
    },
  }),
];
