import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { ProductRow } from '../../../db/payments/model';
import { services } from '../../harness';
import { createPayment, freshShowcase, onTestbed, operator, payAs, paymentRow, startTestbed, waitForStatus, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';

describe('payments: refresh and reading', () => {
  let bed: Testbed;
  let products: Record<string, ProductRow>;
  // Refresh is what brings news here: the simulator's notifications go nowhere.
  before(async () => { bed = await startTestbed({ notifications: false, config: { PAYMENT_REFRESH_MIN_INTERVAL_S: '5' } }); });
  after(() => bed.close());
  beforeEach(async () => {
    products = await freshShowcase();
    bed.processor.resetCounts();
    bed.simulator.setFault(null);
  });

  const refresh = (user: { token: string }, id: string) => bed.api.post(`/v1/payments/${id}/refresh`, undefined, { token: user.token });

  describe('POST /v1/payments/{id}/refresh', () => {
    it('asks the processor and answers the refreshed payment, without payment_url', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      await payAs(payment.payment_url, 'insufficient_funds');
      const answer = await refresh(user, payment.id);
      expect(answer.status).to.equal(200);
      expect(answer.body).to.include({ id: payment.id, status: 'failed' });
      expect(answer.body).not.to.have.property('payment_url');
      expect(bed.processor.statuses).to.equal(1);
    });

    it('asks the processor at most once per several seconds per payment; otherwise answers from our data', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      expect((await refresh(user, payment.id)).body.status).to.equal('created');
      await payAs(payment.payment_url, 'success');

      const answers = await Promise.all([refresh(user, payment.id), refresh(user, payment.id), refresh(user, payment.id)]);

      expect(answers.map((answer) => [answer.status, answer.body.status])).to.deep.equal([[200, 'created'], [200, 'created'], [200, 'created']]);
      expect(bed.processor.statuses).to.equal(1);
      // Once the interval has passed the processor is asked again.
      await services().db('payments').where({ id: payment.id }).update({ last_checked_at: services().db.raw("now() - interval '6 seconds'") });
      expect((await refresh(user, payment.id)).body.status).to.equal('succeeded');
      expect(bed.processor.statuses).to.equal(2);
    });

    it('returns a terminal payment as is, without asking', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      await payAs(payment.payment_url, 'success');
      await services().db('payments').where({ id: payment.id }).update({ last_checked_at: null });
      expect((await refresh(user, payment.id)).body.status).to.equal('succeeded');
      await operator(bed, payment.id, 'refund');
      await services().db('payments').where({ id: payment.id }).update({ last_checked_at: null });
      const before = bed.processor.statuses;
      // Succeeded is terminal: the refund is the chargeback watch's business, not refresh's.
      expect((await refresh(user, payment.id)).body.status).to.equal('succeeded');
      expect(bed.processor.statuses).to.equal(before);
    });

    it('answers from our data when the processor does not answer', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      bed.simulator.setFault('down');
      const answer = await refresh(user, payment.id);
      expect([answer.status, answer.body.status]).to.deep.equal([200, 'created']);
    });

    it('404 for an absent payment, another user\'s, or an id that is no UUID; 401 without a token', async () => {
      const owner = await makeUser();
      const payment = await createPayment(bed, owner, products.pack_100.id);
      const stranger = await makeUser();
      for (const [user, id] of [[stranger, payment.id], [owner, randomUUID()], [owner, 'not-a-uuid']] as const) {
        const answer = await refresh(user, id);
        expect([answer.status, answer.body.error.code]).to.deep.equal([404, 'not_found']);
      }
      expect((await bed.api.post(`/v1/payments/${payment.id}/refresh`)).status).to.equal(401);
      expect(bed.processor.statuses).to.equal(0);
    });

    it('503 provider_unavailable when payments are switched off', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      await onTestbed({ config: { PAYMENTS_ENABLED: '0' } }, async (off) => {
        const answer = await off.api.post(`/v1/payments/${payment.id}/refresh`, undefined, { token: user.token });
        expect([answer.status, answer.body.error.code]).to.deep.equal([503, 'provider_unavailable']);
      });
    });
  });

  describe('GET /v1/payments/{id}', () => {
    it('answers the owner\'s payment, never with payment_url; receipt_url only from succeeded on', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      const created = await bed.api.get(`/v1/payments/${payment.id}`, { token: user.token });
      expect(created.status).to.equal(200);
      expect(created.body).to.deep.equal({
        id: payment.id, status: 'created', product_id: products.pack_100.id, amount_minor: 14900, currency: 643, credits: 100,
        method: 'card', created_at: payment.created_at, paid_at: null, receipt_url: null,
      });

      await payAs(payment.payment_url, 'success');
      await refresh(user, payment.id);
      await waitForStatus(payment.id, 'succeeded');
      const paid = await bed.api.get(`/v1/payments/${payment.id}`, { token: user.token });
      expect(paid.body).not.to.have.property('payment_url');
      expect(paid.body.receipt_url).to.equal(`${bed.app.url}/sim/processor/receipts/${(await paymentRow(payment.id)).processor_order_id}`);
      expect((await fetch(paid.body.receipt_url)).status).to.equal(200);
    });

    it('404 for an absent or another user\'s payment (never 403), 422 for an id that is no UUID, 401 without a token', async () => {
      const owner = await makeUser();
      const payment = await createPayment(bed, owner, products.pack_100.id);
      const stranger = await makeUser();
      const foreign = await bed.api.get(`/v1/payments/${payment.id}`, { token: stranger.token });
      expect([foreign.status, foreign.body.error.code]).to.deep.equal([404, 'not_found']);
      expect((await bed.api.get(`/v1/payments/${randomUUID()}`, { token: owner.token })).status).to.equal(404);
      const malformed = await bed.api.get('/v1/payments/12345', { token: owner.token });
      expect([malformed.status, malformed.body.error.code]).to.deep.equal([422, 'validation_error']);
      expect((await bed.api.get(`/v1/payments/${payment.id}`)).status).to.equal(401);
    });

    it('counts against the shared read budget (429)', async () => {
      await onTestbed({ config: { RATE_READ_BURST: '2', RATE_READ_PER_MINUTE: '1' } }, async (limited) => {
        const user = await makeUser();
        const payment = await createPayment(bed, user, products.pack_100.id);
        await limited.api.get('/v1/payments/products', { token: user.token });
        expect((await limited.api.get(`/v1/payments/${payment.id}`, { token: user.token })).status).to.equal(200);
        const answer = await limited.api.get(`/v1/payments/${payment.id}`, { token: user.token });
        expect([answer.status, answer.body.error.code]).to.deep.equal([429, 'rate_limited']);
      });
    });
  });

  describe('the payer\'s browser pages', () => {
    it('/return and /fail answer static HTML for any id, checking nothing', async () => {
      for (const id of [randomUUID(), 'anything-at-all']) {
        for (const page of ['return', 'fail']) {
          const answer = await fetch(`${bed.app.url}/v1/payments/${id}/${page}`);
          expect(answer.status).to.equal(200);
          expect(answer.headers.get('content-type')).to.match(/^text\/html/);
          expect(await answer.text()).to.contain('<!doctype html>');
        }
      }
    });

    it('speak the language of ?lang=, else of Accept-Language, else Russian', async () => {
      const id = randomUUID();
      const text = async (path: string, headers: Record<string, string> = {}) => (await fetch(`${bed.app.url}${path}`, { headers })).text();
      expect(await text(`/v1/payments/${id}/return?lang=en`)).to.contain('Payment is being processed');
      expect(await text(`/v1/payments/${id}/fail`, { 'Accept-Language': 'en-GB,en;q=0.9' })).to.contain('Payment declined');
      expect(await text(`/v1/payments/${id}/return`)).to.contain('Оплата принята в обработку');
      expect(await text(`/v1/payments/${id}/fail?lang=ru`, { 'Accept-Language': 'en' })).to.contain('Оплата не прошла');
    });

    it('is where the processor sends the payer back', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      const redirect = await payAs(payment.payment_url, 'success');
      const location = redirect.headers.get('location')!;
      expect(new URL(location).pathname).to.equal(`/v1/payments/${payment.id}/return`);
      expect((await fetch(`${bed.app.url}${new URL(location).pathname}`)).status).to.equal(200);
    });
  });
});
