import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { ProductRow } from '../../../db/payments/model';
import { setTimeout as sleep } from 'node:timers/promises';
import { capturingLogger, services } from '../../harness';
import { createPayment, freshShowcase, onTestbed, operator, payAs, paymentRow, startTestbed, waitForStatus, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

const key = () => `key-${randomUUID()}`;

describe('payments: POST /v1/payments', () => {
  let bed: Testbed;
  let products: Record<string, ProductRow>;
  before(async () => { bed = await startTestbed(); });
  after(() => bed.close());
  beforeEach(async () => {
    products = await freshShowcase();
    bed.simulator.setFault(null);
    bed.processor.resetCounts();
  });

  async function keyRow(userId: string, idempotencyKey: string) {
    return services().db('idempotency_keys').where({ user_id: userId, key: idempotencyKey }).first();
  }

  describe('creation', () => {
    it('registers the order at the processor and answers 201 with the payment and its processor page', async () => {
      const user = await makeUser();
      const answer = await bed.api.post('/v1/payments', { product_id: products.pack_500.id, method: 'card' }, { token: user.token });

      expect(answer.status).to.equal(201);
      const payment = answer.body;
      expect(payment).to.have.keys(['id', 'status', 'product_id', 'amount_minor', 'currency', 'credits', 'method', 'created_at', 'paid_at', 'receipt_url', 'payment_url']);
      expect(payment).to.include({ status: 'created', product_id: products.pack_500.id, amount_minor: 59900, currency: 643, credits: 500, method: 'card', paid_at: null, receipt_url: null });
      const row = await paymentRow(payment.id);
      expect(payment.payment_url).to.equal(`${bed.app.url}/sim/processor/pay/${row.processor_order_id}`);
      const order = bed.simulator.orders.get(row.processor_order_id!)!;
      expect(order).to.include({ orderNumber: payment.id, amount: 59900, method: 'card', language: 'ru' });
      // The order lives 30 minutes at the processor.
      expect(order.expiresAt.getTime() - order.registeredAt.getTime()).to.equal(30 * 60_000);
      expect(order.returnUrl).to.match(new RegExp(`/v1/payments/${payment.id}/return$`));
      expect(order.failUrl).to.match(new RegExp(`/v1/payments/${payment.id}/fail$`));
      // The page shows on the processor's side.
      expect((await fetch(payment.payment_url)).status).to.equal(200);
    });

    it('opens the payment page in English for an English profile, in Russian otherwise', async () => {
      const english = await makeUser({ locale: 'en' });
      const russian = await makeUser({ locale: 'ru' });
      const inEnglish = await createPayment(bed, english, products.pack_100.id, { method: 'sbp' });
      const inRussian = await createPayment(bed, russian, products.pack_100.id);
      const orderOf = async (id: string) => bed.simulator.orders.get((await paymentRow(id)).processor_order_id!)!;
      expect(await orderOf(inEnglish.id)).to.include({ language: 'en', method: 'sbp', description: '100 credits' });
      expect(await orderOf(inRussian.id)).to.include({ language: 'ru', description: '100 кредитов' });
      expect(await (await fetch(inEnglish.payment_url)).text()).to.contain('Faster Payments System');
    });
  });

  describe('errors, in the contract\'s order', () => {
    it('401 without a token and 403 registration_required for a guest', async () => {
      const guest = await makeUser({ guest: true });
      const body = { product_id: products.pack_100.id, method: 'card' };
      const anonymous = await bed.api.post('/v1/payments', body);
      expect([anonymous.status, anonymous.body.error.code]).to.deep.equal([401, 'auth_required']);
      const asGuest = await bed.api.post('/v1/payments', body, { token: guest.token });
      expect([asGuest.status, asGuest.body.error.code]).to.deep.equal([403, 'registration_required']);
    });

    it('422 for a method other than card or sbp, a product_id that is not a UUID, a badly formatted key', async () => {
      const user = await makeUser();
      for (const [body, headers] of [
        [{ product_id: products.pack_100.id, method: 'cash' }, {}],
        [{ product_id: 'pack_100', method: 'card' }, {}],
        [{ method: 'card' }, {}],
        [{ product_id: products.pack_100.id, method: 'card' }, { 'Idempotency-Key': 'short' }],
        [{ product_id: products.pack_100.id, method: 'card' }, { 'Idempotency-Key': 'has spaces and is long enough' }],
      ] as [object, Record<string, string>][]) {
        const answer = await bed.api.post('/v1/payments', body, { token: user.token, headers });
        expect(answer.status, JSON.stringify(body)).to.equal(422);
        expect(answer.body.error.code).to.equal('validation_error');
      }
      expect(bed.processor.registers).to.equal(0);
    });

    it('422 comes before 404: a bad method for an absent pack is a validation error', async () => {
      const user = await makeUser();
      const answer = await bed.api.post('/v1/payments', { product_id: randomUUID(), method: 'cash' }, { token: user.token });
      expect(answer.status).to.equal(422);
    });

    it('404 for an absent or switched-off pack', async () => {
      const user = await makeUser();
      await services().db('payment_products').where({ code: 'pack_1500' }).update({ enabled: false });
      for (const productId of [randomUUID(), products.pack_1500.id]) {
        const answer = await bed.api.post('/v1/payments', { product_id: productId, method: 'card' }, { token: user.token });
        expect([answer.status, answer.body.error.code]).to.deep.equal([404, 'not_found']);
      }
    });

    it('404 comes before 403 and 429: an absent pack is not found even at the limit', async () => {
      const user = await makeUser();
      for (let i = 0; i < 5; i += 1) await createPayment(bed, user, products.pack_100.id);
      const answer = await bed.api.post('/v1/payments', { product_id: randomUUID(), method: 'card' }, { token: user.token });
      expect(answer.status).to.equal(404);
    });

    it('403 forbidden once the per-account purchase limit is used: an open unpaid checkout counts', async () => {
      const user = await makeUser();
      await createPayment(bed, user, products.starter_pack.id);
      const again = await bed.api.post('/v1/payments', { product_id: products.starter_pack.id, method: 'card' }, { token: user.token });
      expect([again.status, again.body.error.code]).to.deep.equal([403, 'forbidden']);
      // Another account has its own limit.
      await createPayment(bed, await makeUser(), products.starter_pack.id);
    });

    it('403 forbidden once the pack was paid, also after a refund; a failed or expired checkout frees the limit', async () => {
      const user = await makeUser();
      const declined = await createPayment(bed, user, products.starter_pack.id);
      await payAs(declined.payment_url, 'insufficient_funds');
      await waitForStatus(declined.id, 'failed');

      const paid = await createPayment(bed, user, products.starter_pack.id);
      await payAs(paid.payment_url, 'success');
      await waitForStatus(paid.id, 'succeeded');
      const afterPaid = await bed.api.post('/v1/payments', { product_id: products.starter_pack.id, method: 'card' }, { token: user.token });
      expect(afterPaid.status).to.equal(403);

      expect(await operator(bed, paid.id, 'refund')).to.equal(200);
      await waitForStatus(paid.id, 'refunded');
      const afterRefund = await bed.api.post('/v1/payments', { product_id: products.starter_pack.id, method: 'card' }, { token: user.token });
      expect([afterRefund.status, afterRefund.body.error.code]).to.deep.equal([403, 'forbidden']);
    });

    it('403 comes before 429: a used-up limit is forbidden even with five unfinished payments', async () => {
      const user = await makeUser();
      await createPayment(bed, user, products.starter_pack.id);
      for (let i = 0; i < 4; i += 1) await createPayment(bed, user, products.pack_100.id);
      const answer = await bed.api.post('/v1/payments', { product_id: products.starter_pack.id, method: 'card' }, { token: user.token });
      expect(answer.status).to.equal(403);
    });

    it('429 without Retry-After for a sixth unfinished payment; a payment that becomes terminal frees a slot', async () => {
      const user = await makeUser();
      const open = [];
      for (let i = 0; i < 5; i += 1) open.push(await createPayment(bed, user, products.pack_100.id));
      const sixth = await bed.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token });
      expect([sixth.status, sixth.body.error.code]).to.deep.equal([429, 'rate_limited']);
      expect(sixth.headers.get('retry-after')).to.equal(null);
      expect(bed.processor.registers).to.equal(5);

      await payAs(open[0].payment_url, 'success');
      await waitForStatus(open[0].id, 'succeeded');
      await createPayment(bed, user, products.pack_100.id);
    });

    it('429 comes before 503: with payments off, a sixth payment is still rate limited', async () => {
      const user = await makeUser();
      for (let i = 0; i < 5; i += 1) await createPayment(bed, user, products.pack_100.id);
      await onTestbed({ config: { PAYMENTS_ENABLED: '0' } }, async (off) => {
        const answer = await off.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token });
        expect(answer.status).to.equal(429);
      });
    });

    it('429 with Retry-After when the write rate is exceeded', async () => {
      await onTestbed({ config: { RATE_WRITE_BURST: '1', RATE_WRITE_PER_MINUTE: '1' } }, async (limited) => {
        const user = await makeUser();
        expect((await limited.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token })).status).to.equal(201);
        const answer = await limited.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token });
        expect([answer.status, answer.body.error.code]).to.deep.equal([429, 'rate_limited']);
        expect(Number(answer.headers.get('retry-after'))).to.be.greaterThan(0);
      });
    });

    it('503 provider_unavailable when payments are switched off; nothing is created and the key stays free', async () => {
      const off = await startTestbed({ config: { PAYMENTS_ENABLED: '0' } });
      const user = await makeUser();
      const idempotencyKey = key();
      try {
        const answer = await off.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
        expect([answer.status, answer.body.error.code]).to.deep.equal([503, 'provider_unavailable']);
        expect(off.processor.registers).to.equal(0);
      } finally {
        await off.close();
      }
      expect(await services().db('payments').where({ user_id: user.id })).to.have.length(0);
      expect(await keyRow(user.id, idempotencyKey)).to.equal(undefined);
      await createPayment(bed, user, products.pack_100.id, { key: idempotencyKey });
    });
  });

  describe('Idempotency-Key', () => {
    it('a repeat returns the same payment with the same payment_url and its current status (201), with no second order or slot', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      const first = await createPayment(bed, user, products.starter_pack.id, { key: idempotencyKey });
      await payAs(first.payment_url, 'success');
      await waitForStatus(first.id, 'succeeded');

      const repeat = await bed.api.post('/v1/payments', { method: 'card', product_id: products.starter_pack.id }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });

      expect(repeat.status).to.equal(201);
      expect(repeat.body).to.include({ id: first.id, payment_url: first.payment_url, status: 'succeeded' });
      expect(repeat.body.paid_at).to.be.a('string');
      // The starter pack's limit of one was not spent again, and nothing new was registered.
      expect(bed.processor.registers).to.equal(1);
      expect(await services().db('payments').where({ user_id: user.id })).to.have.length(1);
    });

    it('a repeat answers even when the pack was switched off or the unfinished limit is reached since', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      const first = await createPayment(bed, user, products.pack_100.id, { key: idempotencyKey });
      for (let i = 0; i < 4; i += 1) await createPayment(bed, user, products.pack_100.id);
      await services().db('payment_products').where({ code: 'pack_100' }).update({ enabled: false });
      const repeat = await bed.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
      expect([repeat.status, repeat.body.id]).to.deep.equal([201, first.id]);
    });

    it('409 idempotency_key_reused for the same key with another body; keys are per user', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      await createPayment(bed, user, products.pack_100.id, { key: idempotencyKey });
      const other = await bed.api.post('/v1/payments', { product_id: products.pack_500.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
      expect([other.status, other.body.error.code]).to.deep.equal([409, 'idempotency_key_reused']);
      const otherUser = await makeUser();
      await createPayment(bed, otherUser, products.pack_500.id, { key: idempotencyKey });
    });

    it('without a key every request creates a new payment', async () => {
      const user = await makeUser();
      const first = await createPayment(bed, user, products.pack_100.id);
      const second = await createPayment(bed, user, products.pack_100.id);
      expect(first.id).not.to.equal(second.id);
      expect(first.payment_url).not.to.equal(second.payment_url);
    });

    it('concurrent twins with one key create one payment: the other waits for it or gets 409 request_in_progress', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      const send = () => bed.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
      const answers = await Promise.all([send(), send(), send()]);
      const created = answers.filter((answer) => answer.status === 201);
      expect(created.length).to.be.at.least(1);
      for (const answer of answers) {
        if (answer.status === 201) expect(answer.body.id).to.equal(created[0].body.id);
        else expect([answer.status, answer.body.error.code]).to.deep.equal([409, 'request_in_progress']);
      }
      expect(await services().db('payments').where({ user_id: user.id })).to.have.length(1);
      expect(bed.processor.registers).to.equal(1);
    });
  });

  describe('the processor stops answering during creation (fault test)', () => {
    it('down: 503, the payment is closed, the key stays free; a retry with the same key creates a new payment once the processor is back', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      bed.simulator.setFault('down');

      const answer = await bed.api.post('/v1/payments', { product_id: products.starter_pack.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });

      expect([answer.status, answer.body.error.code]).to.deep.equal([503, 'provider_unavailable']);
      const [closed] = await services().db('payments').where({ user_id: user.id });
      expect(closed).to.include({ status: 'failed', closed_reason: 'not_registered', payment_url: null });
      expect(await keyRow(user.id, idempotencyKey)).to.equal(undefined);

      bed.simulator.setFault(null);
      // The closed checkout holds neither the pack's limit of one nor a slot.
      const retry = await createPayment(bed, user, products.starter_pack.id, { key: idempotencyKey });
      expect(retry.id).not.to.equal(closed.id);
      expect(retry.status).to.equal('created');
    });

    it('hang: the client gets 503 within the register timeout, and a concurrent repeat meanwhile gets 409 request_in_progress', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      bed.simulator.setFault('hang');
      const body = { product_id: products.pack_100.id, method: 'card' };
      const headers = { 'Idempotency-Key': idempotencyKey };

      const started = Date.now();
      const first = bed.api.post('/v1/payments', body, { token: user.token, headers });
      // The first request holds the key while it waits for the processor.
      const [payment] = await eventually(() => services().db('payments').where({ user_id: user.id }), (rows) => rows.length > 0, 2000);
      const repeat = await bed.api.post('/v1/payments', body, { token: user.token, headers });
      expect([repeat.status, repeat.body.error.code]).to.deep.equal([409, 'request_in_progress']);

      const answer = await first;
      expect([answer.status, answer.body.error.code]).to.deep.equal([503, 'provider_unavailable']);
      expect(Date.now() - started).to.be.below(3000);
      expect(await paymentRow(payment.id)).to.include({ status: 'failed', closed_reason: 'not_registered' });
      expect(await keyRow(user.id, idempotencyKey)).to.equal(undefined);

      // The processor comes back (and even registers the abandoned order late): nothing can be paid for it.
      bed.simulator.setFault(null);
      const retry = await createPayment(bed, user, products.pack_100.id, { key: idempotencyKey });
      expect(retry.id).not.to.equal(payment.id);
      expect((await bed.api.get(`/v1/payments/${payment.id}`, { token: user.token })).body.status).to.equal('failed');
    });

    it('a retry after a server-side break (bound key, no page, in-progress mark run out) opens the same payment again without a second order', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      const first = await createPayment(bed, user, products.pack_100.id, { key: idempotencyKey });
      const { processor_order_id: orderId } = await paymentRow(first.id);
      // As if the process had died after the processor answered and before anything was recorded.
      await services().db('payments').where({ id: first.id }).update({ processor_order_id: null, payment_url: null });
      await services().db('idempotency_keys').where({ user_id: user.id, key: idempotencyKey }).update({ in_progress_until: services().db.raw("now() - interval '1 second'") });

      const retry = await bed.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });

      expect(retry.status).to.equal(201);
      expect(retry.body).to.include({ id: first.id, status: 'created', payment_url: first.payment_url });
      expect((await paymentRow(first.id)).processor_order_id).to.equal(orderId);
      expect([...bed.simulator.orders.values()].filter((order) => order.orderNumber === first.id)).to.have.length(1);
      expect((await keyRow(user.id, idempotencyKey)).in_progress_until).to.equal(null);
      expect(await services().db('payments').where({ user_id: user.id })).to.have.length(1);

      // And it can be paid once.
      await payAs(retry.body.payment_url, 'success');
      await waitForStatus(first.id, 'succeeded');
    });

    it('a retry while the broken first request\'s in-progress mark still runs gets 409 request_in_progress', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      const first = await createPayment(bed, user, products.pack_100.id, { key: idempotencyKey });
      await services().db('payments').where({ id: first.id }).update({ processor_order_id: null, payment_url: null });
      await services().db('idempotency_keys').where({ user_id: user.id, key: idempotencyKey }).update({ in_progress_until: services().db.raw("now() + interval '60 seconds'") });
      const retry = await bed.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
      expect([retry.status, retry.body.error.code]).to.deep.equal([409, 'request_in_progress']);
    });

    it('a reopening retry that finds the processor down closes the payment, frees the key and answers 503', async () => {
      const user = await makeUser();
      const idempotencyKey = key();
      const first = await createPayment(bed, user, products.pack_100.id, { key: idempotencyKey });
      await services().db('payments').where({ id: first.id }).update({ processor_order_id: null, payment_url: null });
      await services().db('idempotency_keys').where({ user_id: user.id, key: idempotencyKey }).update({ in_progress_until: services().db.raw("now() - interval '1 second'") });
      bed.simulator.setFault('down');
      const retry = await bed.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
      expect(retry.status).to.equal(503);
      expect(await paymentRow(first.id)).to.include({ status: 'failed', closed_reason: 'not_registered' });
      expect(await keyRow(user.id, idempotencyKey)).to.equal(undefined);
    });
  });

  describe('the processor\'s circuit (CIRCUIT_FAILURES 2, a pause of 1.5 to 3 s)', () => {
    it('after two creations that waited out the timeout, the next answers the same 503 at once, closed and key freed; after the pause one gets through and closes it; one warning each way', async () => {
      const logs = capturingLogger();
      await onTestbed({ config: { CIRCUIT_FAILURES: '2', CIRCUIT_PAUSE_MS: '3000', CIRCUIT_MAX_PAUSE_MS: '3000' }, log: logs.log }, async (outage) => {
        const startLines = logs.lines().length;
        const user = await makeUser();
        const create = async () => {
          const started = Date.now();
          const answer = await outage.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': key() } });
          return { answer, tookMs: Date.now() - started };
        };
        outage.simulator.setFault('hang');
        for (let tried = 0; tried < 2; tried += 1) {
          const { answer, tookMs } = await create();
          expect([answer.status, answer.body.error.code]).to.deep.equal([503, 'provider_unavailable']);
          expect(tookMs).to.be.at.least(400);
        }

        const idempotencyKey = key();
        const started = Date.now();
        const fast = await outage.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
        expect([fast.status, fast.body.error.code]).to.deep.equal([503, 'provider_unavailable']);
        expect(Date.now() - started).to.be.below(200);
        const payments = await services().db('payments').where({ user_id: user.id }).orderBy('created_at');
        expect(payments.map((row) => [row.status, row.closed_reason])).to.deep.equal([['failed', 'not_registered'], ['failed', 'not_registered'], ['failed', 'not_registered']]);
        expect(await keyRow(user.id, idempotencyKey)).to.equal(undefined);

        outage.simulator.setFault(null);
        const { retry_at: retryAt } = await services().db('circuits').first('retry_at');
        await sleep(Math.max(0, retryAt.getTime() - Date.now()) + 20);
        const probe = await createPayment(outage, user, products.pack_100.id, { key: idempotencyKey });
        expect(probe.status).to.equal('created');
        expect((await create()).answer.status).to.equal(201);

        const warnings = logs.lines().slice(startLines).filter((line) => Number(line.level) >= 40).map((line) => line.msg);
        expect(warnings).to.deep.equal([
          `payment processor ${outage.app.url}/sim/processor unavailable: circuit open, calls fail fast until a probe gets an answer`,
          `payment processor ${outage.app.url}/sim/processor answers again: circuit closed`,
        ]);
      });
    });
  });
});
