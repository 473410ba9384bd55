import { expect } from 'chai';
import type { Knex } from 'knex';
import { debit, credit } from '../../../db/credits/ledger';
import type { PaymentRow } from '../../../db/payments/model';
import { orderRegistration } from '../../../services/payments/order-registration';
import { claimDueSubscriptions } from '../../../db/subscriptions/claim-due-subscriptions';
import type { PlanRow } from '../../../db/subscriptions/model';
import type { Services } from '../../../services';
import { advanceSubscription, type ClockStep } from '../../../workers/subscriptions/clock';
import { chargeRenewal } from '../../../workers/subscriptions/renewal';
import { expectLedgerConsistent } from '../../accounts';
import { services } from '../../harness';
import { operator, paymentRow, startTestbed, waitForStatus, type Testbed } from '../../payment-testbed';
import { activeSubscription, freshPlans, operatorOnFirstOrder, periodEndsIn, subscriptionRow, waitForSubscription } from '../../subscription-fixtures';
import { makeUser } from '../../users';
import { jobDataOf, jobsOf } from '../../jobs';

const DAY_MS = 86_400_000;

describe('subscriptions: the clock and the renewal charge', () => {
  let bed: Testbed;
  let plans: Record<string, PlanRow>;
  let db: Knex;
  let app: Services;
  before(async () => {
    bed = await startTestbed();
    db = services().db;
    app = bed.app.services;
  });
  after(() => bed.close());
  beforeEach(async () => {
    ({ plans } = await freshPlans());
    bed.processor.resetCounts();
  });

  /** One round of the clock as the scheduler runs it: claim what is due, advance each. */
  async function tick(): Promise<ClockStep[]> {
    const due = await claimDueSubscriptions(db, 100, 30);
    return Promise.all(due.map((subscription) => advanceSubscription(app, subscription.id)));
  }

  /** The payment the clock made for the subscription's next period, latest attempt. */
  function renewalPayment(subscriptionId: string): Promise<PaymentRow> {
    return db('payments').where({ subscription_id: subscriptionId }).andWhere('period', '>', 1).orderBy([{ column: 'period', order: 'desc' }, { column: 'attempt', order: 'desc' }]).first('*');
  }

  const kindsOf = (userId: string) => db('credit_transactions').where({ user_id: userId }).orderBy('seq').select('kind', 'amount', 'reference');
  const renewJobs = (paymentId: string) => jobsOf('subscription-renew', { paymentId });

  describe('at the end of an active period', () => {
    it('burns the unspent plan credits, makes one payment for the next period and one job; the charge starts the period where the last ended', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      const firstPayment = active.payment_id!;
      await db.transaction((trx) => debit(trx, { userId: user.id, kind: 'reserve', amount: 50, reference: 'spent' }));
      await periodEndsIn(active.id, 0);
      const { current_period_end: endedAt } = await subscriptionRow(active.id);

      expect(await tick()).to.deep.equal(['renewal']);
      const renewal = await renewalPayment(active.id);
      expect(renewal).to.include({ status: 'created', period: 2, attempt: 1, amount_minor: 19900, credits: 150, plan_id: plans.plan_week.id, product_id: null, method: 'card' });
      expect(await subscriptionRow(active.id)).to.include({ status: 'active', period: 1, renewal_attempts: 1, payment_id: renewal.id, next_action_at: null });
      expect(await renewJobs(renewal.id)).to.have.length(1);
      expect(await kindsOf(user.id)).to.deep.equal([
        { kind: 'plan_grant', amount: 150, reference: firstPayment },
        { kind: 'reserve', amount: -50, reference: 'spent' },
        { kind: 'plan_expired', amount: -100, reference: firstPayment },
      ]);
      // A second look changes nothing.
      await db('subscriptions').where({ id: active.id }).update({ next_action_at: db.fn.now() });
      expect(await tick()).to.deep.equal(['nothing']);
      expect(await db('payments').where({ subscription_id: active.id })).to.have.length(2);

      expect(await chargeRenewal(app, renewal.id)).to.equal('applied');
      expect((await paymentRow(renewal.id)).status).to.equal('succeeded');
      const renewed = await subscriptionRow(active.id);
      expect(renewed).to.include({ status: 'active', period: 2, renewal_attempts: 0, payment_id: renewal.id });
      expect(renewed.current_period_start!.getTime()).to.equal(endedAt!.getTime());
      expect(renewed.current_period_end!.getTime()).to.equal(endedAt!.getTime() + 7 * DAY_MS);
      expect((await kindsOf(user.id)).slice(3)).to.deep.equal([{ kind: 'plan_grant', amount: 150, reference: renewal.id }]);
      const balance = await bed.api.get('/v1/credits/balance', { token: user.token });
      expect(balance.body).to.deep.equal({ balance: 150, plan_credits: 150, plan_expires_at: renewed.current_period_end!.toISOString() });

      // The job again (a retry, a duplicate): nothing more is charged.
      expect(await chargeRenewal(app, renewal.id)).to.equal('skipped');
      expect(bed.processor.charges).to.equal(1);
      const order = bed.simulator.orders.get(renewal.processor_order_id ?? (await paymentRow(renewal.id)).processor_order_id!)!;
      expect(order).to.include({ orderNumber: renewal.id, amount: 19900, clientId: user.id, saveCard: false, bindingId: active.card_binding_id });
      await expectLedgerConsistent();
    });

    it('charges the renewal price the subscription was sold with, whatever the plan costs now', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      await db('subscription_plans').where({ id: plans.plan_week.id }).update({ price_minor: 99900, credits: 5 });
      await periodEndsIn(active.id, 0);
      await tick();
      expect(await renewalPayment(active.id)).to.include({ amount_minor: 19900, credits: 150 });
    });

    it('a cancelled one ends as expired instead, its plan credits burned, nothing charged', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      await bed.api.post(`/v1/subscriptions/${active.id}/cancel`, { reason: 'quality' }, { token: user.token });
      await periodEndsIn(active.id, 0);
      expect(await tick()).to.deep.equal(['expired']);
      expect(await subscriptionRow(active.id)).to.include({ status: 'expired', ended_reason: 'canceled', next_action_at: null });
      expect(await db('payments').where({ subscription_id: active.id })).to.have.length(1);
      expect((await bed.api.get('/v1/credits/balance', { token: user.token })).body).to.deep.equal({ balance: 0, plan_credits: 0, plan_expires_at: null });
    });

    it('is not touched before it is due: a period still running waits for its reminders', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      expect(await tick()).to.deep.equal([]);
      await db('subscriptions').where({ id: active.id }).update({ next_action_at: db.fn.now() });
      // Claimed by mistake: nothing is due, so nothing happens and the next look is the first reminder.
      expect(await tick()).to.deep.equal(['nothing']);
      const row = await subscriptionRow(active.id);
      expect(row.next_action_at!.getTime()).to.equal(row.current_period_end!.getTime() - 3 * DAY_MS);
    });
  });

  describe('declined renewals', () => {
    it('past_due, retried 1 and 3 billing days after the period end, then expired; no plan credits meanwhile', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      for (let decline = 0; decline < 3; decline += 1) expect(await operatorOnFirstOrder(bed, active.id, 'decline-next')).to.equal(200);
      await periodEndsIn(active.id, 0);
      const { current_period_end: end } = await subscriptionRow(active.id);

      for (const [attempt, retryAfterDays] of [[1, 1], [2, 3]]) {
        expect(await tick()).to.deep.equal(['renewal']);
        const payment = await renewalPayment(active.id);
        expect(payment).to.include({ period: 2, attempt });
        expect(await chargeRenewal(app, payment.id)).to.equal('applied');
        expect((await paymentRow(payment.id)).status).to.equal('failed');
        const pastDue = await subscriptionRow(active.id);
        expect(pastDue).to.include({ status: 'past_due', period: 1, renewal_attempts: attempt, payment_id: payment.id });
        expect(pastDue.next_action_at!.getTime()).to.equal(end!.getTime() + retryAfterDays * DAY_MS);
        expect((await bed.api.get('/v1/credits/balance', { token: user.token })).body).to.deep.equal({ balance: 0, plan_credits: 0, plan_expires_at: null });
        expect(await tick()).to.deep.equal([]);
        await db('subscriptions').where({ id: active.id }).update({ next_action_at: db.fn.now() });
      }
      expect(await tick()).to.deep.equal(['renewal']);
      const last = await renewalPayment(active.id);
      expect(last).to.include({ attempt: 3 });
      await chargeRenewal(app, last.id);
      expect(await subscriptionRow(active.id)).to.include({ status: 'expired', ended_reason: 'renewal_declined', renewal_attempts: 3, next_action_at: null });
      expect(await db('payments').where({ subscription_id: active.id, period: 2 })).to.have.length(3);
      expect(await tick()).to.deep.equal([]);
      const answer = await bed.api.get(`/v1/subscriptions/${active.id}`, { token: user.token });
      expect(answer.body).to.include({ status: 'expired', payment_id: last.id });
    });

    it('a retry that succeeds makes it active again, the new period starting at the payment (the anchor moves)', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_month.id);
      await operatorOnFirstOrder(bed, active.id, 'decline-next');
      await periodEndsIn(active.id, 0);
      await tick();
      await chargeRenewal(app, (await renewalPayment(active.id)).id);
      expect((await subscriptionRow(active.id)).status).to.equal('past_due');

      await db('subscriptions').where({ id: active.id }).update({ next_action_at: db.fn.now() });
      await tick();
      const retry = await renewalPayment(active.id);
      await chargeRenewal(app, retry.id);
      const paid = await paymentRow(retry.id);
      const renewed = await subscriptionRow(active.id);
      expect(renewed).to.include({ status: 'active', period: 2, renewal_attempts: 0, payment_id: retry.id });
      expect(renewed.current_period_start!.getTime()).to.be.closeTo(paid.paid_at!.getTime(), 1000);
      expect(renewed.current_period_end!.getTime() - renewed.current_period_start!.getTime()).to.equal(30 * DAY_MS);
      expect((await bed.api.get('/v1/credits/balance', { token: user.token })).body.plan_credits).to.equal(700);
    });

    it('a late capture of an earlier declined attempt, after the period was paid by the retry, buys its credits as a plain purchase', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      await operatorOnFirstOrder(bed, active.id, 'decline-next');
      await periodEndsIn(active.id, 0);
      await tick();
      const declined = await renewalPayment(active.id);
      await chargeRenewal(app, declined.id);
      await db('subscriptions').where({ id: active.id }).update({ next_action_at: db.fn.now() });
      await tick();
      await chargeRenewal(app, (await renewalPayment(active.id)).id);

      expect(await operator(bed, declined.id, 'late-capture')).to.equal(200);
      await waitForStatus(declined.id, 'succeeded');
      expect(await subscriptionRow(active.id)).to.include({ status: 'active', period: 2 });
      const last = (await kindsOf(user.id)).at(-1);
      expect(last).to.deep.equal({ kind: 'purchase', amount: 150, reference: declined.id });
      // Refunding that one revokes the subscription too, and takes back the purchase.
      expect(await operator(bed, declined.id, 'refund')).to.equal(200);
      await waitForSubscription(active.id, (row) => row.status === 'revoked');
      expect((await kindsOf(user.id)).slice(-2).map((row) => row.kind).sort()).to.deep.equal(['plan_expired', 'purchase_revoke']);
      await expectLedgerConsistent();
    });
  });

  describe('the renewal job', () => {
    /** A weekly subscription whose period ended, with the renewal payment the clock made for it. */
    async function dueRenewal() {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      await periodEndsIn(active.id, 0);
      await tick();
      return { user, active, payment: await renewalPayment(active.id) };
    }

    it('a registration the processor refuses (another order holds the payment\'s number): nothing charged, the payment closed as not registered', async () => {
      const { payment } = await dueRenewal();
      // An order for another amount under this payment's number: the processor answers "already processed".
      await app.paymentProcessor.registerOrder(orderRegistration(app.config.publicBaseUrl, { ...payment, amount_minor: payment.amount_minor + 100 }, { title_ru: 'другой', title_en: 'other', locale: 'en' }));
      bed.processor.resetCounts();
      expect(await chargeRenewal(app, payment.id)).to.equal('closed');
      expect(bed.processor.charges).to.equal(0);
      expect(await paymentRow(payment.id)).to.include({ status: 'failed', closed_reason: 'not_registered' });
    });

    it('charges nothing for a subscription cancelled while the job waited, and ends it at once', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      await periodEndsIn(active.id, 0);
      await tick();
      await bed.api.post(`/v1/subscriptions/${active.id}/cancel`, { reason: 'not_using' }, { token: user.token });
      const payment = await renewalPayment(active.id);
      bed.processor.resetCounts();
      expect(await chargeRenewal(app, payment.id)).to.equal('closed');
      expect(bed.processor.charges + bed.processor.registers).to.equal(0);
      expect(await paymentRow(payment.id)).to.include({ status: 'failed', closed_reason: 'not_registered' });
      expect(await subscriptionRow(active.id)).to.include({ status: 'expired', ended_reason: 'canceled' });
    });

    it('a job retried after the charge went through applies the outcome without charging again', async () => {
      const { user, active, payment } = await dueRenewal();
      // The first run registered and charged, then died before applying anything.
      const registration = await app.paymentProcessor.registerOrder({
        paymentId: payment.id, amountMinor: 19900, currency: 643, description: 'Week', locale: 'ru', method: 'card',
        returnUrl: `${bed.app.url}/r`, failUrl: `${bed.app.url}/f`, receipt: { itemName: 'Неделя', quantity: 1, priceMinor: 19900 }, clientId: user.id,
      });
      await db('payments').where({ id: payment.id }).update({ processor_order_id: registration.orderId, payment_url: registration.paymentUrl });
      await app.paymentProcessor.chargeBinding({ orderId: registration.orderId, bindingId: active.card_binding_id! });
      bed.processor.resetCounts();

      expect(await chargeRenewal(app, payment.id)).to.equal('applied');
      expect(bed.processor.charges).to.equal(0);
      expect(await subscriptionRow(active.id)).to.include({ status: 'active', period: 2 });
    });

    it('two runs of one job at once charge the card once and start the period once', async () => {
      const { user, active, payment } = await dueRenewal();
      await Promise.all([chargeRenewal(app, payment.id), chargeRenewal(app, payment.id)]);
      const orders = [...bed.simulator.orders.values()].filter((order) => order.orderNumber === payment.id);
      expect(orders).to.have.length(1);
      expect(await subscriptionRow(active.id)).to.include({ status: 'active', period: 2 });
      expect(await db('credit_transactions').where({ user_id: user.id, kind: 'plan_grant' })).to.have.length(2);
    });

    it('a refund of a renewal payment revokes the subscription and burns what is left', async () => {
      const { user, active, payment } = await dueRenewal();
      await chargeRenewal(app, payment.id);
      expect(await operator(bed, payment.id, 'chargeback')).to.equal(200);
      await waitForSubscription(active.id, (row) => row.status === 'revoked');
      expect((await bed.api.get('/v1/credits/balance', { token: user.token })).body).to.deep.equal({ balance: 0, plan_credits: 0, plan_expires_at: null });
    });
  });

  describe('reminders', () => {
    const reminderJobs = (subscriptionId: string) =>
      jobDataOf('push-send', { kind: 'subscription_reminder' })
        .then((jobs) => jobs.map((job) => job.data as Record<string, string>).filter((data) => data.subscription_id === subscriptionId));

    it('3 and 1 billing days before the end of an active period, once per period each, days_left as strings', async () => {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      await periodEndsIn(active.id, 3 * 86_400 - 60);
      expect(await tick()).to.deep.equal(['reminder']);
      let row = await subscriptionRow(active.id);
      expect(row.next_action_at!.getTime()).to.equal(row.current_period_end!.getTime() - DAY_MS);
      await db('subscriptions').where({ id: active.id }).update({ next_action_at: db.fn.now() });
      expect(await tick()).to.deep.equal(['nothing']);

      await periodEndsIn(active.id, 86_400 - 60);
      expect(await tick()).to.deep.equal(['reminder']);
      row = await subscriptionRow(active.id);
      expect(row.next_action_at!.getTime()).to.equal(row.current_period_end!.getTime());
      expect(await reminderJobs(active.id)).to.deep.equal([
        { subscription_id: active.id, status: 'period_ending', days_left: '3' },
        { subscription_id: active.id, status: 'period_ending', days_left: '1' },
      ]);
      expect(await db('subscription_reminders').where({ subscription_id: active.id }).orderBy('days_left', 'desc').pluck('days_left')).to.deep.equal([3, 1]);
    });

    it('a clock late for both sends only the 1-day reminder; a cancelled subscription is still reminded; an expired one never', async () => {
      const user = await makeUser();
      const late = await activeSubscription(bed, user, plans.plan_week.id);
      await periodEndsIn(late.id, 3600);
      expect(await tick()).to.deep.equal(['reminder']);
      expect((await reminderJobs(late.id)).map((data: Record<string, string>) => data.days_left)).to.deep.equal(['1']);

      const cancelled = await activeSubscription(bed, user, plans.plan_month.id);
      await bed.api.post(`/v1/subscriptions/${cancelled.id}/cancel`, { reason: 'other' }, { token: user.token });
      await periodEndsIn(cancelled.id, 3 * 86_400 - 60);
      expect(await tick()).to.deep.equal(['reminder']);

      await db('subscriptions').where({ id: late.id }).update({ status: 'expired', next_action_at: db.fn.now() });
      expect(await tick()).to.deep.equal(['nothing']);
      expect((await subscriptionRow(late.id)).next_action_at).to.equal(null);
    });
  });

  describe('exactly once, whatever runs at once', () => {
    it('many clocks on the same due subscriptions: one burn, one payment, one job each', async () => {
      const users = await Promise.all(Array.from({ length: 6 }, () => makeUser()));
      const subscriptions = [];
      for (const user of users) subscriptions.push(await activeSubscription(bed, user, plans.plan_week.id));
      for (const subscription of subscriptions) await periodEndsIn(subscription.id, 0);
      // Several scheduler rounds at once, and handlers called directly for the same rows.
      const steps = (await Promise.all([tick(), tick(), tick(), ...subscriptions.map((subscription) => advanceSubscription(app, subscription.id))])).flat();
      expect(steps.filter((step) => step === 'renewal')).to.have.length(6);
      for (const subscription of subscriptions) {
        expect(await db('payments').where({ subscription_id: subscription.id, period: 2 })).to.have.length(1);
        expect(await db('credit_transactions').where({ user_id: subscription.user_id, kind: 'plan_expired' })).to.have.length(1);
        expect(await renewJobs((await renewalPayment(subscription.id)).id)).to.have.length(1);
      }
    });
  });

  describe('plan credits in the ledger', () => {
    it('a refund after the period ended returns the plan part and burns it at once; the rest stays', async () => {
      const user = await makeUser({ balance: 20 });
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      // 160 taken: 150 from the plan (first), 10 of the user's own.
      await db.transaction((trx) => debit(trx, { userId: user.id, kind: 'reserve', amount: 160, reference: 'generation-1' }));
      expect((await bed.api.get('/v1/credits/balance', { token: user.token })).body).to.include({ balance: 10, plan_credits: 0 });
      await periodEndsIn(active.id, 0);
      await tick();
      await db.transaction((trx) => credit(trx, { userId: user.id, kind: 'refund', amount: 160, reference: 'generation-1' }));
      const rows = await kindsOf(user.id);
      expect(rows.slice(-2)).to.deep.equal([
        { kind: 'refund', amount: 160, reference: 'generation-1' },
        { kind: 'plan_expired', amount: -150, reference: 'generation-1' },
      ]);
      expect((await bed.api.get('/v1/credits/balance', { token: user.token })).body).to.deep.equal({ balance: 20, plan_credits: 0, plan_expires_at: null });
      await expectLedgerConsistent();
    });
  });
});
