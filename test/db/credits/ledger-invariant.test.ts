import { expect } from 'chai';
import { burnPlanCredits, credit, debit, debitUpTo, grantPlanCredits } from '../../../db/credits/ledger';
import { settleEarning } from '../../../db/user-effects/settle-earning';
import { expireGuests } from '../../../workers/accounts/expire-guests';
import { expectLedgerConsistent, newEmail, password, type Api } from '../../accounts';
import { startFakeUserinfo, type FakeUserinfo } from '../../api/identity/fake-providers';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, type TestApp } from '../../harness';
import { expectPlanBucketsConsistent, periodPaymentOf } from '../../plan-buckets';
import { earningOf } from '../../user-effect-fixtures';

/** A small seeded generator, so a failing sequence can be replayed from its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value ^= value + Math.imul(value ^ (value >>> 7), 61 | value);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}

interface Account {
  id: string;
  token: string;
  email: string | null;
  isGuest: boolean;
}

describe('ledger invariant under a random mix of account operations and plan credits', () => {
  let app: TestApp;
  let api: Api;
  let userinfo: FakeUserinfo;

  before(async () => {
    userinfo = await startFakeUserinfo();
    app = await startTestApp({ config: { IDP_C_USERINFO_URL: `${userinfo.url}/me` } });
    api = client(app.url);
  });
  after(async () => {
    await app.close();
    await userinfo.close();
  });
  beforeEach(() => resetDatabase());

  for (const seed of [20261122, 7]) {
    it(`keeps every balance equal to the sum of its transactions (seed ${seed})`, async function () {
      this.timeout(60_000);
      const next = random(seed);
      const pick = <T>(items: T[]): T | undefined => (items.length ? items[Math.floor(next() * items.length)] : undefined);
      const { db } = services();
      const accounts: Account[] = [];
      const devices = Array.from({ length: 8 }, (_, index) => `invariant-device-${seed}-${index}`);
      let counter = 0;

      const codeOf = async () => {
        const someone = pick(accounts);
        if (!someone || next() < 0.3) return undefined;
        return (await db('users').where({ id: someone.id }).first('referral_code'))?.referral_code;
      };
      const remember = (answer: { status: number; body: any }) => {
        if (answer.status !== 200 && answer.status !== 201) return;
        const { user, access_token: token } = answer.body;
        const known = accounts.find((account) => account.id === user.id);
        if (known) Object.assign(known, { token, email: user.email, isGuest: user.is_anonymous });
        else accounts.push({ id: user.id, token, email: user.email, isGuest: user.is_anonymous });
      };

      const operations: (() => Promise<void>)[] = [
        async () => remember(await api.post('/v1/auth/anonymous', { device_id: pick(devices)!, ref_code: await codeOf() })),
        async () => remember(await api.post('/v1/auth/register', { email: newEmail(), password, device_id: pick(devices), ref_code: await codeOf() })),
        async () => {
          const visitor = pick(accounts.filter((account) => account.isGuest));
          if (visitor) remember(await api.post('/v1/auth/register', { email: newEmail(), password, ref_code: await codeOf() }, { token: visitor.token }));
        },
        async () => {
          counter += 1;
          userinfo.profiles.set(`tok-${seed}-${counter}`, { sub: `person-${Math.floor(next() * 20)}` });
          const visitor = pick(accounts.filter((account) => account.isGuest));
          remember(await api.post('/v1/auth/idp_c', { access_token: `tok-${seed}-${counter}`, ref_code: await codeOf() }, { token: visitor?.token }));
        },
        async () => {
          const visitor = pick(accounts.filter((account) => account.isGuest));
          const owner = pick(accounts.filter((account) => account.email));
          if (visitor && owner) await api.post('/v1/auth/login', { email: owner.email, password }, { token: visitor.token });
        },
        async () => {
          const someone = pick(accounts);
          if (!someone) return;
          counter += 1;
          const amount = 1 + Math.floor(next() * 120);
          const reference = `op-${Math.floor(next() * 10)}`;
          await db.transaction(async (trx) => {
            if (!(await trx('users').where({ id: someone.id }).first('id'))) return;
            const kind = pick(['reserve', 'refund', 'purchase', 'purchase_revoke', 'effect_earned'] as const)!;
            if (kind === 'reserve') await debit(trx, { userId: someone.id, kind, amount, reference });
            else if (kind === 'purchase_revoke') await debitUpTo(trx, { userId: someone.id, kind, amount, reference });
            else await credit(trx, { userId: someone.id, kind, amount, reference });
          });
        },
        async () => {
          // A paid subscription period: its plan credits, a new bucket (a new subscription, or the next period of one).
          const someone = pick(accounts);
          if (!someone || !(await db('users').where({ id: someone.id }).first('id'))) return;
          const existing = next() < 0.5 ? pick(await db('subscriptions').where({ user_id: someone.id }).pluck('id')) : undefined;
          const period = await periodPaymentOf(someone.id, existing);
          const amount = 1 + Math.floor(next() * 200);
          await db.transaction((trx) => grantPlanCredits(trx, { userId: someone.id, ...period, amount, expiresAt: new Date(Date.now() + next() * 1e9) }));
        },
        async () => {
          // A generation of someone with plan credits: the reserve takes them first; its refund may come later.
          const holder = pick(await db('plan_credit_buckets').whereNull('burned_at').andWhere('credits', '>', 0).distinct('user_id'));
          if (!holder) return;
          const amount = 1 + Math.floor(next() * 150);
          await db.transaction((trx) => debit(trx, { userId: holder.user_id, kind: 'reserve', amount, reference: `op-${Math.floor(next() * 10)}` }));
        },
        async () => {
          // A period ends (or its payment is refunded): what is left of its bucket burns.
          const bucket = pick(await db('plan_credit_buckets').whereNull('burned_at').select('user_id', 'subscription_id'));
          if (bucket) await db.transaction((trx) => burnPlanCredits(trx, { userId: bucket.user_id, subscriptionId: bucket.subscription_id }));
        },
        async () => {
          const leaving = pick(accounts);
          if (!leaving || next() < 0.5) return;
          await api.delete('/v1/me', { token: leaving.token });
          accounts.splice(accounts.indexOf(leaving), 1);
        },
        async () => {
          const idle = pick(accounts.filter((account) => account.isGuest));
          if (!idle) return;
          await db('users').where({ id: idle.id }).update({ last_sign_in_at: new Date(Date.now() - 40 * 24 * 3600 * 1000) });
          await expireGuests(services());
          accounts.splice(accounts.indexOf(idle), 1);
        },
        async () => {
          // An author's earning comes due and is settled (`effect_earned`); a second settlement changes nothing.
          const author = pick(accounts);
          if (!author || !(await db('users').where({ id: author.id }).first('id'))) return;
          const { earningId } = await earningOf(author.id, { amount: 1 + Math.floor(next() * 30) });
          for (let attempt = 0; attempt < 2; attempt += 1) await db.transaction((trx) => settleEarning(trx, services().boss, earningId));
        },
      ];

      for (let step = 1; step <= 120; step += 1) {
        await pick(operations)!();
        if (step % 15 === 0) {
          await expectLedgerConsistent();
          await expectPlanBucketsConsistent();
        }
      }
      await expectLedgerConsistent();
      await expectPlanBucketsConsistent();

      const { rows: unpaid } = await db.raw(`
        select r.invited_id from referrals r
        where r.paid_at is not null and r.invited_id is not null
          and (select count(*) from credit_transactions t where t.user_id = r.invited_id and t.kind = 'referral_bonus') <> 1`);
      expect(unpaid, 'each paid referral pays the invited user exactly once').to.deep.equal([]);
      const { rows: negative } = await db.raw('select id from users where balance < 0');
      expect(negative).to.deep.equal([]);
      const { rows: [{ count }] } = await db.raw('select count(*)::integer as count from credit_transactions');
      expect(count, 'the run did something').to.be.above(10);
      const { rows: unsettled } = await db.raw(`
        select e.id from user_effect_earnings e
        where e.status = 'settled' and (select count(*) from credit_transactions t where t.kind = 'effect_earned' and t.reference = e.id::text) <> 1`);
      expect(unsettled, 'each settled earning is credited exactly once').to.deep.equal([]);
      const { rows: [{ settled }] } = await db.raw("select count(*)::integer as settled from user_effect_earnings where status = 'settled'");
      expect(settled, 'the run settled author earnings').to.be.above(0);
      const { rows: planKinds } = await db.raw("select distinct kind from credit_transactions where plan_share is not null order by kind");
      expect(planKinds.map((row: { kind: string }) => row.kind), 'the run granted, spent and burned plan credits').to.include.members(['plan_expired', 'plan_grant', 'reserve']);
    });
  }
});
