import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { startWeb } from '../../../api/web';
import { client } from '../../client';
import { freePort, resetDatabase, services, startTestApp, testConfig, useTestApp } from '../../harness';
import { sample } from './exposition';
import { makeUser } from '../../users';

/** The refund and payment metrics, and `/metrics` behind a token or on a port of its own. */
describe('GET /metrics: refunds, payments, access', () => {
  describe('outcome metrics read from the database', () => {
    const t = useTestApp();
    beforeEach(() => resetDatabase());

    async function metrics(): Promise<string> {
      return (await t.api.get('/metrics')).text;
    }

    async function ledgerRow(userId: string, kind: 'reserve' | 'refund', reference: string): Promise<void> {
      await services().db('credit_transactions').insert({ user_id: userId, kind, amount: kind === 'reserve' ? -10 : 10, balance_after: 100, reference });
    }

    it('counts generation charges and refunds from the ledger, each row once', async () => {
      const before = await metrics();
      const reservesBefore = sample(before, 'credit_transactions_total', { kind: 'reserve' }) ?? 0;
      const refundsBefore = sample(before, 'credit_transactions_total', { kind: 'refund' }) ?? 0;
      const user = await makeUser();
      for (const reference of ['g1', 'g2', 'g3', 'g4']) await ledgerRow(user.id, 'reserve', reference);
      await ledgerRow(user.id, 'refund', 'g2');
      await services().db('credit_transactions').insert({ user_id: user.id, kind: 'welcome', amount: 50, balance_after: 150, reference: 'welcome' });

      const after = await metrics();
      expect(sample(after, 'credit_transactions_total', { kind: 'reserve' })).to.equal(reservesBefore + 4);
      expect(sample(after, 'credit_transactions_total', { kind: 'refund' })).to.equal(refundsBefore + 1);
      expect(after).not.to.contain('kind="welcome"');
      const again = await metrics();
      expect(sample(again, 'credit_transactions_total', { kind: 'reserve' })).to.equal(reservesBefore + 4);
    });

    it('counts payments by the status they reached, and reports the open ones and the oldest one\'s age', async () => {
      const { db } = services();
      const [product] = await db('payment_products').insert({ code: `pack-${randomUUID()}`, title_ru: 'Пакет', title_en: 'Pack', price_minor: 14900, credits: 100 }).returning('id');
      const user = await makeUser();
      const payment = (minutesAgo: number) => ({
        user_id: user.id, product_id: product.id, amount_minor: 14900, currency: 643, credits: 100, method: 'card',
        created_at: new Date(Date.now() - minutesAgo * 60_000), expires_at: new Date(Date.now() + 30 * 60_000),
      });
      const before = await metrics();
      const count = (text: string, status: string) => sample(text, 'payment_status_changes_total', { status }) ?? 0;

      const [stuck] = await db('payments').insert(payment(90)).returning('id');
      const [declinedThenPaid] = await db('payments').insert(payment(5)).returning('id');
      const first = await metrics();
      expect(count(first, 'created') - count(before, 'created')).to.equal(2);
      expect(sample(first, 'payments_open')).to.equal(2);
      expect(sample(first, 'payments_oldest_open_age_seconds')).to.be.within(90 * 60 - 5, 90 * 60 + 60);

      await db('payments').where({ id: declinedThenPaid.id }).update({ status: 'failed', status_changed_at: db.fn.now() });
      const second = await metrics();
      await db('payments').where({ id: declinedThenPaid.id }).update({ status: 'succeeded', status_changed_at: db.fn.now() });
      const third = await metrics();
      expect(count(third, 'failed') - count(before, 'failed')).to.equal(1);
      expect(count(third, 'succeeded') - count(before, 'succeeded')).to.equal(1);
      expect(count(third, 'created') - count(second, 'created')).to.equal(0);
      expect(sample(third, 'payments_open')).to.equal(1);
      expect(stuck.id).to.be.a('string');
    });
  });

  describe('subscription metrics', () => {
    const t = useTestApp();
    beforeEach(() => resetDatabase());

    it('reports live subscriptions by status and how late the clock is', async () => {
      const { db } = services();
      const [plan] = await db('subscription_plans').insert({ code: `plan-${randomUUID()}`, title_ru: 'План', title_en: 'Plan', period: 'week', price_minor: 19900, credits: 150 }).returning('id');
      const subscription = async (status: string, nextActionMinutesAgo: number | null) => {
        const user = await makeUser();
        await db('subscriptions').insert({
          user_id: user.id, plan_id: plan.id, status, period_days: 7, billing_day_s: 86_400, credits: 150, renewal_price_minor: 19900, currency: 643,
          next_action_at: nextActionMinutesAgo === null ? null : new Date(Date.now() - nextActionMinutesAgo * 60_000),
        });
      };
      const idle = (await t.api.get('/metrics')).text;
      expect(sample(idle, 'subscription_clock_lag_seconds')).to.equal(0);
      expect(sample(idle, 'subscriptions', { status: 'active' })).to.equal(0);

      await subscription('active', -60);
      await subscription('active', 3);
      await subscription('past_due', null);
      await subscription('pending', null);
      await subscription('expired', null);
      const scraped = (await t.api.get('/metrics')).text;
      expect(['pending', 'active', 'past_due'].map((status) => sample(scraped, 'subscriptions', { status }))).to.deep.equal([1, 2, 1]);
      expect(scraped).not.to.contain('status="expired"');
      expect(sample(scraped, 'subscription_clock_lag_seconds')).to.be.within(175, 240);
    });
  });

  describe('METRICS_TOKEN', () => {
    it('puts /metrics behind a bearer token: none or a wrong one is 401 auth_required', async () => {
      const app = await startTestApp({ config: { METRICS_TOKEN: 'scrape-token-0123456789abcdef' } });
      try {
        const api = client(app.url);
        const anonymous = await api.get('/metrics');
        expect([anonymous.status, anonymous.body.error.code]).to.deep.equal([401, 'auth_required']);
        expect(anonymous.headers.get('www-authenticate')).to.equal('Bearer realm="metrics"');
        expect((await api.get('/metrics', { token: 'scrape-token-wrong' })).status).to.equal(401);
        const scraped = await api.get('/metrics', { token: 'scrape-token-0123456789abcdef' });
        expect(scraped.status).to.equal(200);
        expect(scraped.text).to.contain('# TYPE provider_slots_leased gauge');
        // The rest of the service is not affected.
        expect((await api.get('/healthz')).status).to.equal(200);
      } finally {
        await app.close();
      }
    });
  });

  describe('METRICS_PORT', () => {
    it('serves /metrics only on a listener of its own, which serves nothing else; the token applies there too', async function () {
      this.timeout(20_000);
      const port = await freePort();
      const config = testConfig({ METRICS_PORT: String(port), METRICS_TOKEN: 'scrape-token-0123456789abcdef' });
      const web = await startWeb({ ...services(), config });
      try {
        const main = client(web.url);
        expect((await main.get('/metrics', { token: 'scrape-token-0123456789abcdef' })).status).to.equal(404);
        expect((await main.get('/healthz')).status).to.equal(200);

        const own = client(`http://127.0.0.1:${port}`, { checkContract: false });
        expect((await own.get('/metrics')).status).to.equal(401);
        const scraped = await own.get('/metrics', { token: 'scrape-token-0123456789abcdef' });
        expect(scraped.status).to.equal(200);
        expect(scraped.text).to.contain('# TYPE queue_oldest_job_age_seconds gauge');
        expect((await own.get('/healthz')).status).to.equal(404);
        expect((await own.get('/v1/me')).status).to.equal(404);
      } finally {
        await web.stop();
      }
      // Stopped with the web role.
      expect(await fetch(`http://127.0.0.1:${port}/metrics`).then(() => 'open', () => 'closed')).to.equal('closed');
    });
  });
});
