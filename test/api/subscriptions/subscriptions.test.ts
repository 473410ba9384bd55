import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { debit } from '../../../db/credits/ledger';
import type { ProductRow } from '../../../db/payments/model';
import type { PlanRow } from '../../../db/subscriptions/model';
import { services } from '../../harness';
import { createPayment, payAs, paymentRow, startTestbed, waitForStatus, type Testbed } from '../../payment-testbed';
import { activeSubscription, freshPlans, operatorOnFirstOrder, subscribe, subscriptionRow, waitForSubscription } from '../../subscription-fixtures';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';

const key = () => `key-${randomUUID()}`;

const subscriptionFields = [
  'id', 'plan_id', 'plan_code', 'status', 'current_period_start', 'current_period_end', 'cancel_at_period_end',
  'canceled_at', 'cancel_reason', 'renewal_price_minor', 'currency', 'payment_id', 'created_at',
];

describe('subscriptions: the API', () => {
  let bed: Testbed;
  let plans: Record<string, PlanRow>;
  let products: Record<string, ProductRow>;
  before(async () => { bed = await startTestbed(); });
  after(() => bed.close());
  beforeEach(async () => {
    ({ plans, products } = await freshPlans());
    bed.simulator.setFault(null);
    bed.processor.resetCounts();
  });

  const post = (user: TestUser, body: object, idempotencyKey?: string) =>
    bed.api.post('/v1/subscriptions', body, { token: user.token, headers: idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {} });
  const cancel = (user: TestUser, id: string, body: object = { reason: 'not_using' }) => bed.api.post(`/v1/subscriptions/${id}/cancel`, body, { token: user.token });
  const keyRow = (userId: string, idempotencyKey: string) => services().db('idempotency_keys').where({ user_id: userId, key: idempotencyKey }).first();

  describe('GET /v1/subscriptions/plans', () => {
    it('lists the demo plans in operator order, offer-only plans absent, in the profile language or `locale`', async () => {
      const user = await makeUser({ locale: 'en' });
      const answer = await bed.api.get('/v1/subscriptions/plans', { token: user.token });
      expect(answer.status).to.equal(200);
      expect(answer.body).to.deep.equal([
        { id: plans.plan_week.id, code: 'plan_week', title: 'Week', description: '150 credits every week', period: 'week', price_minor: 19900, currency: 643, credits: 150, badge: null },
        { id: plans.plan_month.id, code: 'plan_month', title: 'Month', description: '700 credits every month', period: 'month', price_minor: 59900, currency: 643, credits: 700, badge: 'popular' },
        { id: plans.plan_year.id, code: 'plan_year', title: 'Year', description: '9000 credits every year', period: 'year', price_minor: 499000, currency: 643, credits: 9000, badge: 'best_value' },
      ]);
      const russian = await bed.api.get('/v1/subscriptions/plans?locale=ru', { token: user.token });
      expect(russian.body.map((plan: { title: string }) => plan.title)).to.deep.equal(['Неделя', 'Месяц', 'Год']);
    });

    it('is open to guests, needs a token, refuses an unknown locale, and follows the operator: order, switched off', async () => {
      const guest = await makeUser({ guest: true });
      expect((await bed.api.get('/v1/subscriptions/plans', { token: guest.token })).status).to.equal(200);
      expect((await bed.api.get('/v1/subscriptions/plans')).status).to.equal(401);
      expect((await bed.api.get('/v1/subscriptions/plans?locale=de', { token: guest.token })).status).to.equal(422);
      await services().db('subscription_plans').where({ code: 'plan_year' }).update({ position: -1 });
      await services().db('subscription_plans').where({ code: 'plan_week' }).update({ enabled: false });
      const answer = await bed.api.get('/v1/subscriptions/plans', { token: guest.token });
      expect(answer.body.map((plan: { code: string }) => plan.code)).to.deep.equal(['plan_year', 'plan_month']);
    });
  });

  describe('POST /v1/subscriptions', () => {
    it('answers 201 with a pending subscription, its first payment and the processor page; the order saves the card for the user', async () => {
      const user = await makeUser({ locale: 'en' });
      const answer = await post(user, { plan_id: plans.plan_month.id });

      expect(answer.status, answer.text).to.equal(201);
      expect(answer.body).to.have.all.keys([...subscriptionFields, 'payment_url']);
      expect(answer.body).to.include({
        plan_id: plans.plan_month.id, plan_code: 'plan_month', status: 'pending', current_period_start: null, current_period_end: null,
        cancel_at_period_end: false, canceled_at: null, cancel_reason: null, renewal_price_minor: 59900, currency: 643,
      });
      const payment = await paymentRow(answer.body.payment_id);
      expect(payment).to.include({ status: 'created', product_id: null, plan_id: plans.plan_month.id, amount_minor: 59900, credits: 700, method: 'card', subscription_id: answer.body.id, period: 1, attempt: 1 });
      expect(answer.body.payment_url).to.equal(payment.payment_url);
      const order = bed.simulator.orders.get(payment.processor_order_id!)!;
      expect(order).to.include({ orderNumber: payment.id, amount: 59900, clientId: user.id, saveCard: true, description: 'Month', language: 'en' });

      // The first payment is an ordinary payment: followed with GET /v1/payments/{id}, the plan id as its product.
      const followed = await bed.api.get(`/v1/payments/${payment.id}`, { token: user.token });
      expect(followed.body).to.include({ id: payment.id, status: 'created', product_id: plans.plan_month.id, credits: 700, amount_minor: 59900 });
      expect(followed.body).not.to.have.property('payment_url');
    });

    it('takes `method: card` (the default); `sbp` is 422, as recurring charges need a saved card', async () => {
      const user = await makeUser();
      expect((await post(user, { plan_id: plans.plan_week.id, method: 'card' })).status).to.equal(201);
      const sbp = await post(user, { plan_id: plans.plan_month.id, method: 'sbp' });
      expect([sbp.status, sbp.body.error.code]).to.deep.equal([422, 'validation_error']);
      expect(sbp.body.error.details[0].loc).to.deep.equal(['body', 'method']);
    });

    describe('errors, in order', () => {
      it('401 without a token, 403 registration_required for a guest, before validation', async () => {
        const guest = await makeUser({ guest: true });
        expect((await bed.api.post('/v1/subscriptions', { plan_id: plans.plan_week.id })).status).to.equal(401);
        const answer = await post(guest, { plan_id: 'not-a-uuid' });
        expect([answer.status, answer.body.error.code]).to.deep.equal([403, 'registration_required']);
      });

      it('422 for a missing or malformed plan_id and a badly formatted key, naming the field', async () => {
        const user = await makeUser();
        for (const [body, headers, loc] of [
          [{}, {}, ['body', 'plan_id']],
          [{ plan_id: 'plan_week' }, {}, ['body', 'plan_id']],
          [{ plan_id: plans.plan_week.id }, { 'Idempotency-Key': 'short' }, ['header', 'Idempotency-Key']],
        ] as [object, Record<string, string>, string[]][]) {
          const answer = await bed.api.post('/v1/subscriptions', body, { token: user.token, headers });
          expect(answer.status, JSON.stringify(body)).to.equal(422);
          expect(answer.body.error.details[0].loc).to.deep.equal(loc);
          expect(answer.text).not.to.contain('plan_week"');
        }
      });

      it('503 when payments are switched off comes first, even for an unknown plan; nothing is created and the key stays free', async () => {
        const off = await startTestbed({ config: { PAYMENTS_ENABLED: '0' } });
        const user = await makeUser();
        const idempotencyKey = key();
        try {
          for (const planId of [plans.plan_week.id, randomUUID()]) {
            const answer = await off.api.post('/v1/subscriptions', { plan_id: planId }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
            expect([answer.status, answer.body.error.code]).to.deep.equal([503, 'provider_unavailable']);
          }
        } finally {
          await off.close();
        }
        expect(await services().db('subscriptions').where({ user_id: user.id })).to.have.length(0);
        expect(await keyRow(user.id, idempotencyKey)).to.equal(undefined);
        await subscribe(bed, user, plans.plan_week.id, idempotencyKey);
      });

      it('404 for an unknown or switched-off plan, before 409 and 429', async () => {
        const user = await makeUser();
        for (let i = 0; i < 5; i += 1) await createPayment(bed, user, products.pack_100.id);
        expect((await post(user, { plan_id: randomUUID() })).status).to.equal(404);
        await services().db('subscription_plans').where({ code: 'plan_week' }).update({ enabled: false });
        const answer = await post(user, { plan_id: plans.plan_week.id });
        expect([answer.status, answer.body.error.code]).to.deep.equal([404, 'not_found']);
      });

      it('409 already_subscribed while a subscription to the plan is pending (unpaid), active or past_due; another plan is fine', async () => {
        const user = await makeUser();
        const first = await subscribe(bed, user, plans.plan_week.id);
        const again = await post(user, { plan_id: plans.plan_week.id });
        expect([again.status, again.body.error.code]).to.deep.equal([409, 'already_subscribed']);
        await subscribe(bed, user, plans.plan_month.id);

        await payAs(first.payment_url, 'success');
        await waitForSubscription(first.id, (row) => row.status === 'active');
        expect((await post(user, { plan_id: plans.plan_week.id })).status).to.equal(409);
        await services().db('subscriptions').where({ id: first.id }).update({ status: 'past_due' });
        expect((await post(user, { plan_id: plans.plan_week.id })).status).to.equal(409);

        // Ended ones do not count.
        await services().db('subscriptions').where({ id: first.id }).update({ status: 'expired' });
        expect((await post(user, { plan_id: plans.plan_week.id })).status).to.equal(201);
        // Another account has its own.
        await subscribe(bed, await makeUser(), plans.plan_week.id);
      });

      it('409 comes before 429: five unfinished payments and a live subscription answer already_subscribed', async () => {
        const user = await makeUser();
        await subscribe(bed, user, plans.plan_week.id);
        for (let i = 0; i < 4; i += 1) await createPayment(bed, user, products.pack_100.id);
        expect((await post(user, { plan_id: plans.plan_week.id })).status).to.equal(409);
        const sixth = await post(user, { plan_id: plans.plan_month.id });
        expect([sixth.status, sixth.body.error.code]).to.deep.equal([429, 'rate_limited']);
        expect(sixth.headers.get('retry-after')).to.equal(null);
        expect(await services().db('subscriptions').where({ user_id: user.id })).to.have.length(1);
      });
    });

    describe('Idempotency-Key (paired with POST /v1/payments)', () => {
      it('a repeat returns the existing subscription (201, same payment_url, its current status) instead of 409 already_subscribed', async () => {
        const user = await makeUser();
        const idempotencyKey = key();
        const first = await subscribe(bed, user, plans.plan_month.id, idempotencyKey);
        const repeat = await post(user, { plan_id: plans.plan_month.id, method: 'card' }, idempotencyKey);
        expect(repeat.status).to.equal(201);
        expect(repeat.body).to.deep.equal(first);

        await payAs(first.payment_url, 'success');
        await waitForSubscription(first.id, (row) => row.status === 'active');
        const afterPaid = await post(user, { plan_id: plans.plan_month.id }, idempotencyKey);
        expect(afterPaid.status).to.equal(201);
        expect(afterPaid.body).to.include({ id: first.id, status: 'active', payment_url: first.payment_url });
        expect(bed.processor.registers).to.equal(1);
      });

      it('409 idempotency_key_reused for another plan, or for the key of a payment (one pair), and the other way round', async () => {
        const user = await makeUser();
        const idempotencyKey = key();
        await subscribe(bed, user, plans.plan_month.id, idempotencyKey);
        const otherPlan = await post(user, { plan_id: plans.plan_week.id }, idempotencyKey);
        expect([otherPlan.status, otherPlan.body.error.code]).to.deep.equal([409, 'idempotency_key_reused']);
        const asPayment = await bed.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token, headers: { 'Idempotency-Key': idempotencyKey } });
        expect([asPayment.status, asPayment.body.error.code]).to.deep.equal([409, 'idempotency_key_reused']);

        const paymentKey = key();
        await createPayment(bed, user, products.pack_100.id, { key: paymentKey });
        const asSubscription = await post(user, { plan_id: plans.plan_year.id }, paymentKey);
        expect([asSubscription.status, asSubscription.body.error.code]).to.deep.equal([409, 'idempotency_key_reused']);
      });

      it('a key used for a generation does not collide (another pair)', async () => {
        const user = await makeUser();
        const idempotencyKey = key();
        await services().db('idempotency_keys').insert({
          user_id: user.id, pair: 'generation', key: idempotencyKey, endpoint: 'POST /v1/generations', fingerprint: 'x', object_id: randomUUID(), status_code: 202,
        });
        expect((await post(user, { plan_id: plans.plan_week.id }, idempotencyKey)).status).to.equal(201);
      });

      it('hang: 503 within the register timeout, a concurrent repeat gets 409 request_in_progress; the subscription ends, the key is free', async () => {
        const user = await makeUser();
        const idempotencyKey = key();
        bed.simulator.setFault('hang');
        const first = post(user, { plan_id: plans.plan_week.id }, idempotencyKey);
        const [pending] = await eventually(() => services().db('subscriptions').where({ user_id: user.id }), (rows) => rows.length > 0, 2000);
        const repeat = await post(user, { plan_id: plans.plan_week.id }, idempotencyKey);
        expect([repeat.status, repeat.body.error.code]).to.deep.equal([409, 'request_in_progress']);

        const answer = await first;
        expect([answer.status, answer.body.error.code]).to.deep.equal([503, 'provider_unavailable']);
        expect(await subscriptionRow(pending.id)).to.include({ status: 'expired', ended_reason: 'not_registered' });
        expect(await paymentRow((await subscriptionRow(pending.id)).payment_id!)).to.include({ status: 'failed', closed_reason: 'not_registered' });
        expect(await keyRow(user.id, idempotencyKey)).to.equal(undefined);

        bed.simulator.setFault(null);
        const retry = await subscribe(bed, user, plans.plan_week.id, idempotencyKey);
        expect(retry.id).not.to.equal(pending.id);
      });

      it('a retry after a server-side break registers the same first payment again: one order, same page', async () => {
        const user = await makeUser();
        const idempotencyKey = key();
        const first = await subscribe(bed, user, plans.plan_week.id, idempotencyKey);
        const { processor_order_id: orderId } = await paymentRow(first.payment_id);
        await services().db('payments').where({ id: first.payment_id }).update({ processor_order_id: null, payment_url: null });
        await services().db('idempotency_keys').where({ user_id: user.id, key: idempotencyKey }).update({ in_progress_until: services().db.raw("now() - interval '1 second'") });

        const retry = await post(user, { plan_id: plans.plan_week.id }, idempotencyKey);
        expect(retry.status).to.equal(201);
        expect(retry.body).to.include({ id: first.id, payment_url: first.payment_url, status: 'pending' });
        expect((await paymentRow(first.payment_id)).processor_order_id).to.equal(orderId);
        expect([...bed.simulator.orders.values()].filter((order) => order.orderNumber === first.payment_id)).to.have.length(1);
      });
    });
  });

  describe('the first period', () => {
    it('paid: active for one period from the payment, the card kept, the plan credits granted inside the balance', async () => {
      const user = await makeUser({ balance: 40 });
      const created = await subscribe(bed, user, plans.plan_week.id);
      await payAs(created.payment_url, 'success');
      const active = await waitForSubscription(created.id, (row) => row.status === 'active' && row.card_binding_id !== null);
      const payment = await waitForStatus(created.payment_id, 'succeeded');

      expect(active).to.include({ period: 1, renewal_attempts: 0, payment_id: payment.id });
      expect(active.current_period_start!.getTime()).to.be.closeTo(payment.paid_at!.getTime(), 1000);
      expect(active.current_period_end!.getTime() - active.current_period_start!.getTime()).to.equal(7 * 86_400_000);
      // The clock looks again 3 billing days before the end, for the first reminder.
      expect(active.next_action_at!.getTime()).to.equal(active.current_period_end!.getTime() - 3 * 86_400_000);

      const answer = await bed.api.get(`/v1/subscriptions/${created.id}`, { token: user.token });
      expect(answer.body).to.include({ status: 'active', current_period_start: active.current_period_start!.toISOString(), current_period_end: active.current_period_end!.toISOString() });
      expect(answer.body).not.to.have.property('payment_url');

      const balance = await bed.api.get('/v1/credits/balance', { token: user.token });
      expect(balance.body).to.deep.equal({ balance: 190, plan_credits: 150, plan_expires_at: active.current_period_end!.toISOString() });
      const me = await bed.api.get('/v1/me', { token: user.token });
      expect(me.body).to.include({ balance: 190, plan_credits: 150, plan_expires_at: active.current_period_end!.toISOString() });
      const history = await bed.api.get('/v1/credits/transactions', { token: user.token });
      expect(history.body.items[0]).to.include({ kind: 'plan_grant', amount: 150, balance_after: 190, reference: payment.id });
      expect(history.body.items.map((item: { kind: string }) => item.kind)).not.to.include('purchase');
    });

    it('declined: stays pending (the payer may try again on the page), then paid: active', async () => {
      const user = await makeUser();
      const created = await subscribe(bed, user, plans.plan_week.id);
      await payAs(created.payment_url, 'insufficient_funds');
      await waitForStatus(created.payment_id, 'failed');
      expect((await subscriptionRow(created.id)).status).to.equal('pending');
      await payAs(created.payment_url, 'success');
      await waitForSubscription(created.id, (row) => row.status === 'active');
    });

    it('expired at the processor: the subscription ends as expired, and the plan is free to subscribe again', async () => {
      const user = await makeUser();
      const created = await subscribe(bed, user, plans.plan_week.id);
      await operatorOnFirstOrder(bed, created.id, 'expire');
      await waitForSubscription(created.id, (row) => row.status === 'expired');
      expect(await subscriptionRow(created.id)).to.include({ ended_reason: 'payment_expired', next_action_at: null });
      await subscribe(bed, user, plans.plan_week.id);
    });

    for (const action of ['refund', 'chargeback']) {
      it(`${action} of the paid first payment revokes the subscription and burns its plan credits at once (one plan_expired row)`, async () => {
        const user = await makeUser({ balance: 10 });
        const active = await activeSubscription(bed, user, plans.plan_week.id);
        await services().db.transaction((trx) => debit(trx, { userId: user.id, kind: 'reserve', amount: 30, reference: 'spent-before-refund' }));
        expect(await operatorOnFirstOrder(bed, active.id, action)).to.equal(200);
        await waitForSubscription(active.id, (row) => row.status === 'revoked');
        expect(await subscriptionRow(active.id)).to.include({ ended_reason: 'payment_refunded', next_action_at: null });
        const balance = await bed.api.get('/v1/credits/balance', { token: user.token });
        // 10 + 150 granted, 30 spent (from the plan credits), 120 burned: the 10 of their own stay.
        expect(balance.body).to.deep.equal({ balance: 10, plan_credits: 0, plan_expires_at: null });
        const kinds = await services().db('credit_transactions').where({ user_id: user.id }).orderBy('seq').pluck('kind');
        expect(kinds).to.deep.equal(['welcome', 'plan_grant', 'reserve', 'plan_expired']);
        expect(await services().db('credit_transactions').where({ user_id: user.id, kind: 'plan_expired' }).first('amount')).to.include({ amount: -120 });
        // Revoked is terminal: cancelling it is refused, subscribing again is allowed.
        const refused = await cancel(user, active.id);
        expect(refused.status).to.equal(422);
        await subscribe(bed, user, plans.plan_week.id);
      });
    }
  });

  it('DELETE /v1/me takes the subscriptions, their payments and plan credits with the account', async () => {
    const user = await makeUser({ balance: 5 });
    const active = await activeSubscription(bed, user, plans.plan_week.id);
    await subscribe(bed, user, plans.plan_month.id);
    expect((await bed.api.delete('/v1/me', { token: user.token })).status).to.equal(204);
    const { db } = services();
    for (const table of ['subscriptions', 'payments', 'plan_credit_buckets', 'credit_transactions']) {
      expect(await db(table).where({ user_id: user.id }), table).to.have.length(0);
    }
    expect(await db('subscription_reminders').where({ subscription_id: active.id })).to.have.length(0);
  });

  describe('GET /v1/subscriptions and /v1/subscriptions/{id}', () => {
    it('lists the caller\'s subscriptions newest first, paged; another\'s or an absent id is 404; guests are refused', async () => {
      const user = await makeUser();
      const week = await subscribe(bed, user, plans.plan_week.id);
      const month = await subscribe(bed, user, plans.plan_month.id);
      const stranger = await makeUser();
      const theirs = await subscribe(bed, stranger, plans.plan_week.id);

      const list = await bed.api.get('/v1/subscriptions', { token: user.token });
      expect(list.status).to.equal(200);
      expect(list.body).to.include({ total: 2, limit: 20, offset: 0 });
      expect(list.body.items.map((item: { id: string }) => item.id)).to.deep.equal([month.id, week.id]);
      expect(list.body.items[0]).to.have.all.keys(subscriptionFields);
      const second = await bed.api.get('/v1/subscriptions?limit=1&offset=1', { token: user.token });
      expect(second.body.items.map((item: { id: string }) => item.id)).to.deep.equal([week.id]);
      expect((await bed.api.get('/v1/subscriptions?limit=0', { token: user.token })).status).to.equal(422);

      for (const id of [theirs.id, randomUUID(), 'not-a-uuid']) {
        const answer = await bed.api.get(`/v1/subscriptions/${id}`, { token: user.token });
        expect([answer.status, answer.body.error.code], id).to.deep.equal([404, 'not_found']);
      }
      const guest = await makeUser({ guest: true });
      for (const path of ['/v1/subscriptions', `/v1/subscriptions/${week.id}`]) {
        expect((await bed.api.get(path, { token: guest.token })).body.error.code).to.equal('registration_required');
      }
      const guestCancel = await bed.api.post(`/v1/subscriptions/${week.id}/cancel`, {}, { token: guest.token });
      expect([guestCancel.status, guestCancel.body.error.code]).to.deep.equal([403, 'registration_required']);
    });
  });

  describe('POST /v1/subscriptions/{id}/cancel', () => {
    it('an active one gets cancel_at_period_end and keeps its plan credits; again: 200 with the same record', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_month.id);
      const answer = await cancel(user, active.id, { reason: 'too_expensive', comment: 'A bit much for me.' });
      expect(answer.status).to.equal(200);
      expect(answer.body).to.include({ id: active.id, status: 'active', cancel_at_period_end: true, cancel_reason: 'too_expensive' });
      expect(answer.body.canceled_at).to.be.a('string');
      expect(await subscriptionRow(active.id)).to.include({ cancel_comment: 'A bit much for me.' });
      expect((await bed.api.get('/v1/credits/balance', { token: user.token })).body.plan_credits).to.equal(700);

      const again = await cancel(user, active.id, { reason: 'other' });
      expect(again.status).to.equal(200);
      expect(again.body).to.deep.equal(answer.body);
    });

    it('a pending one ends at once as expired; cancelling it again is 422 invalid_status', async () => {
      const user = await makeUser();
      const created = await subscribe(bed, user, plans.plan_week.id);
      const answer = await cancel(user, created.id, { reason: 'switched_service' });
      expect(answer.body).to.include({ status: 'expired', cancel_at_period_end: false, cancel_reason: 'switched_service' });
      const again = await cancel(user, created.id);
      expect([again.status, again.body.error.code]).to.deep.equal([422, 'validation_error']);
      expect(again.body.error.details).to.deep.equal([{ loc: ['path', 'id'], msg: 'A subscription that is expired cannot be cancelled.', type: 'invalid_status' }]);
      await subscribe(bed, user, plans.plan_week.id);
    });

    it('a past_due one gets cancel_at_period_end, and the clock is asked to end it at once', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      await services().db('subscriptions').where({ id: active.id }).update({ status: 'past_due', next_action_at: services().db.raw("now() + interval '1 day'") });
      const answer = await cancel(user, active.id);
      expect(answer.body).to.include({ status: 'past_due', cancel_at_period_end: true });
      expect((await subscriptionRow(active.id)).next_action_at!.getTime()).to.be.at.most(Date.now() + 1000);
    });

    it('422 for a missing or unknown reason or a comment over 1000 characters, checked before the id; 404 for another\'s', async () => {
      const user = await makeUser();
      const created = await subscribe(bed, user, plans.plan_week.id);
      for (const body of [{}, { reason: 'bored' }, { reason: 'other', comment: 'x'.repeat(1001) }, { reason: 'other', comment: 5 }]) {
        const answer = await cancel(user, randomUUID(), body);
        expect([answer.status, answer.body.error.code], JSON.stringify(body)).to.deep.equal([422, 'validation_error']);
        expect(answer.text).not.to.contain('bored');
      }
      for (const reason of ['too_expensive', 'not_using', 'missing_features', 'quality', 'technical_issues', 'switched_service', 'other']) {
        expect((await cancel(await makeUser(), randomUUID(), { reason })).status, reason).to.equal(404);
      }
      expect((await cancel(await makeUser(), created.id)).status).to.equal(404);
      expect((await subscriptionRow(created.id)).status).to.equal('pending');
      expect((await cancel(user, created.id, { reason: 'other', comment: 'x'.repeat(1000) })).status).to.equal(200);
    });
  });

  it('/v1/openapi.json describes every subscription path, body and answer, and the offer\'s two kinds of product', async () => {
    const { body: document } = await bed.api.get('/v1/openapi.json');
    const paths = document.paths;
    // Named shapes are `$ref`s into components/schemas.
    const resolved = (schema: { $ref?: string }): any => (schema.$ref ? document.components.schemas[schema.$ref.split('/').pop()!] : schema);
    const answer = (route: string, method: string, status: number) => resolved(paths[route][method].responses[status].content['application/json'].schema);
    expect(paths).to.include.keys('/v1/subscriptions/plans', '/v1/subscriptions', '/v1/subscriptions/{id}', '/v1/subscriptions/{id}/cancel');
    const create = paths['/v1/subscriptions'].post;
    expect(create.parameters.map((parameter: { name: string }) => parameter.name)).to.include('Idempotency-Key');
    expect(create.requestBody.content['application/json'].schema.properties.method).to.include({ default: 'card' }).and.deep.include({ enum: ['card'] });
    expect(answer('/v1/subscriptions', 'post', 201).required).to.include.members(['payment_url', 'payment_id', 'cancel_at_period_end']);
    expect(create.responses).to.include.keys('403', '404', '409', '422', '429', '503');
    expect(Object.keys(create.responses['409'].content['application/json'].examples)).to.have.members(['already_subscribed', 'idempotency_key_reused', 'request_in_progress']);
    expect(create.responses).not.to.have.property('501');
    const cancelBody = paths['/v1/subscriptions/{id}/cancel'].post.requestBody.content['application/json'].schema;
    expect(cancelBody.properties.reason.enum).to.deep.equal(['too_expensive', 'not_using', 'missing_features', 'quality', 'technical_issues', 'switched_service', 'other']);
    expect(cancelBody.properties.comment).to.include({ maxLength: 1000 });
    expect(paths['/v1/subscriptions/plans'].get['x-access']).to.equal('token');
    expect(paths['/v1/subscriptions'].get['x-access']).to.equal('registered');
    expect(answer('/v1/credits/balance', 'get', 200).required).to.deep.equal(['balance', 'plan_credits', 'plan_expires_at']);
    expect(answer('/v1/me', 'get', 200).properties).to.include.keys('plan_credits', 'plan_expires_at');
    const offer = resolved(answer('/v1/offers/current', 'get', 200).anyOf[0]);
    expect(offer.properties.product.oneOf.map((kind: { $ref: string }) => resolved(kind).properties.kind.enum)).to.deep.equal([['pack'], ['plan']]);
  });

  describe('a special offer that sells a plan', () => {
    beforeEach(async () => {
      // Only the plan offer is on.
      await services().db('offers').update({ enabled: services().db.raw("code = 'subscription_intro'") });
    });

    it('offers the plan with kind, period and the later price; paid with POST /v1/subscriptions at the discounted first price', async () => {
      const user = await makeUser({ locale: 'en' });
      const offer = await bed.api.post('/v1/offers/paywall-dismissed', undefined, { token: user.token });
      expect(offer.body.code).to.equal('subscription_intro');
      expect(offer.body.product).to.deep.equal({
        id: plans.plan_month_intro.id, code: 'plan_month_intro', title: 'Month: the first one discounted', price_minor: 29900, credits: 700, badge: null,
        kind: 'plan', period: 'month', renewal_price_minor: 59900,
      });

      const created = await subscribe(bed, user, offer.body.product.id);
      expect(created).to.include({ plan_code: 'plan_month_intro', renewal_price_minor: 59900 });
      expect(await paymentRow(created.payment_id)).to.include({ amount_minor: 29900, credits: 700 });
      await payAs(created.payment_url, 'success');
      await waitForSubscription(created.id, (row) => row.status === 'active');
      // Paid: the offer is over.
      expect((await bed.api.get('/v1/offers/current', { token: user.token })).body).to.equal(null);
    });

    it('403 forbidden when the plan offer was not issued, its window is over, or it is paid; never listed', async () => {
      const user = await makeUser();
      const notIssued = await post(user, { plan_id: plans.plan_month_intro.id });
      expect([notIssued.status, notIssued.body.error.code]).to.deep.equal([403, 'forbidden']);
      expect((await bed.api.get('/v1/subscriptions/plans', { token: user.token })).body.map((plan: { code: string }) => plan.code)).not.to.include('plan_month_intro');

      await bed.api.post('/v1/offers/paywall-dismissed', undefined, { token: user.token });
      await services().db('offer_issues').where({ user_id: user.id }).update({ expires_at: services().db.raw("now() - interval '1 second'") });
      expect((await post(user, { plan_id: plans.plan_month_intro.id })).status).to.equal(403);

      const payer = await makeUser();
      await bed.api.post('/v1/offers/paywall-dismissed', undefined, { token: payer.token });
      const active = await activeSubscription(bed, payer, plans.plan_month_intro.id);
      await services().db('subscriptions').where({ id: active.id }).update({ status: 'expired' });
      const again = await post(payer, { plan_id: plans.plan_month_intro.id });
      expect([again.status, again.body.error.code]).to.deep.equal([403, 'forbidden']);
    });

    it('a pack offer answers kind: pack', async () => {
      await services().db('offers').update({ enabled: services().db.raw("code = 'paywall_discount'") });
      const offer = await bed.api.post('/v1/offers/paywall-dismissed', undefined, { token: (await makeUser()).token });
      expect(offer.body.product).to.include({ code: 'offer_pack_400', kind: 'pack' });
      expect(offer.body.product).not.to.have.property('period');
    });
  });
});
