import { expect } from 'chai';
import { WEBHOOK_PATH } from '../../../api/payments/webhook';
import type { Knex } from 'knex';
import { debit } from '../../../db/credits/ledger';
import type { PaymentRow } from '../../../db/payments/model';
import { notificationChecksum } from '../../../clients/payment-processor/signature';
import { markPaymentSucceeded } from '../../../db/payments/mark-payment-succeeded';
import { recordRegistration } from '../../../db/payments/record-registration';
import { orderRegistrationOf } from '../../../services/payments/order-registration';
import { claimDueSubscriptions } from '../../../db/subscriptions/claim-due-subscriptions';
import { insertRenewalPayments } from '../../../db/subscriptions/insert-renewal-payments';
import type { PlanRow, SubscriptionRow } from '../../../db/subscriptions/model';
import type { Services } from '../../../services';
import { advanceSubscription, startRenewalBatch } from '../../../workers/subscriptions/clock';
import { chargeRenewal, chargeRenewals } from '../../../workers/subscriptions/renewal';
import { expectLedgerConsistent } from '../../accounts';
import { services } from '../../harness';
import { notificationSecret, paymentRow, startTestbed, type Testbed } from '../../payment-testbed';
import { activeSubscription, freshPlans, operatorOnFirstOrder, periodEndsIn, subscriptionRow } from '../../subscription-fixtures';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { jobsOf } from '../../jobs';

/**
 * The clock's batch of renewals (`startRenewalBatch`): every active period that ended is started in
 * one transaction (burn, payment, job), then charged one job each by the workers.
 */
describe('subscriptions: renewals started in batches', () => {
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

  /** `count` active weekly subscriptions of their own users, 50 of their 150 plan credits spent, all ended now. */
  const tokens = new Map<string, string>();
  async function endedSubscriptions(count: number): Promise<SubscriptionRow[]> {
    const rows: SubscriptionRow[] = [];
    for (let index = 0; index < count; index += 1) {
      const user = await makeUser();
      const active = await activeSubscription(bed, user, plans.plan_week.id);
      tokens.set(active.id, user.token);
      await db.transaction((trx) => debit(trx, { userId: user.id, kind: 'reserve', amount: 50, reference: `spent-${index}` }));
      await periodEndsIn(active.id, 0);
      rows.push(active);
    }
    return rows;
  }

  const renewalPayments = (subscriptionId: string): Promise<PaymentRow[]> => db('payments').where({ subscription_id: subscriptionId }).andWhere('period', '>', 1).select('*');
  const renewJobs = async (paymentId: string) => (await jobsOf('subscription-renew', { paymentId }))
    .map((job) => ({ id: job.id, retry_limit: job.retryLimit, expire_seconds: job.expireInSeconds }));

  it('starts every due renewal in one transaction: each burned once, one payment and one job each, the job with the queue\'s retries', async () => {
    const ended = await endedSubscriptions(3);
    const notDue = await activeSubscription(bed, await makeUser(), plans.plan_week.id);
    expect(await startRenewalBatch(app)).to.equal(3);
    for (const subscription of ended) {
      const [payment] = await renewalPayments(subscription.id);
      expect(payment).to.include({ status: 'created', period: 2, attempt: 1, amount_minor: 19900, credits: 150, method: 'card', plan_id: plans.plan_week.id, product_id: null });
      expect(payment.expires_at!.getTime()).to.be.greaterThan(Date.now());
      expect(await subscriptionRow(subscription.id)).to.include({ status: 'active', period: 1, renewal_attempts: 1, payment_id: payment.id, next_action_at: null });
      expect(await renewJobs(payment.id)).to.deep.equal([{ id: (await renewJobs(payment.id))[0].id, retry_limit: 5, expire_seconds: 300 }]);
      expect(await db('credit_transactions').where({ user_id: subscription.user_id }).orderBy('seq').select('kind', 'amount', 'balance_after', 'reference')).to.deep.equal([
        { kind: 'plan_grant', amount: 150, balance_after: 150, reference: subscription.payment_id },
        { kind: 'reserve', amount: -50, balance_after: 100, reference: `spent-${ended.indexOf(subscription)}` },
        { kind: 'plan_expired', amount: -100, balance_after: 0, reference: subscription.payment_id },
      ]);
    }
    expect(await renewalPayments(notDue.id)).to.deep.equal([]);
    // Nothing is due any more: a second batch and the one-by-one path start nothing.
    expect(await startRenewalBatch(app)).to.equal(0);
    await db('subscriptions').whereIn('id', ended.map((row) => row.id)).update({ next_action_at: db.fn.now() });
    expect(await startRenewalBatch(app)).to.equal(0);
    expect(await Promise.all(ended.map((row) => advanceSubscription(app, row.id)))).to.deep.equal(['nothing', 'nothing', 'nothing']);
    await expectLedgerConsistent();
  });

  it('a paid period burns what the last one left before its grant, and writes no burn when the clock burned it already', async () => {
    const [unburned, burned] = await endedSubscriptions(2);
    // One period's payment made without the clock (so nothing burned), the other through it.
    const [{ payment_id: unburnedPayment }] = await db.transaction((trx) => insertRenewalPayments(trx, [unburned.id], app.config.payments));
    expect(await startRenewalBatch(app)).to.equal(1);
    const [{ id: burnedPayment }] = await renewalPayments(burned.id);
    const burnStatements: string[] = [];
    const listen = (query: { sql: string }) => { if (query.sql.includes('plan_credit_buckets b set credits = 0')) burnStatements.push(query.sql); };
    db.on('query', listen);
    try {
      await db.transaction((trx) => markPaymentSucceeded(trx, unburnedPayment, null, app.config.payments));
      expect(burnStatements).to.have.length(1);
      await db.transaction((trx) => markPaymentSucceeded(trx, burnedPayment, null, app.config.payments));
      expect(burnStatements).to.have.length(1);
    } finally {
      db.removeListener('query', listen);
    }
    for (const [subscription, payment] of [[unburned, unburnedPayment], [burned, burnedPayment]] as const) {
      expect(await db('credit_transactions').where({ user_id: subscription.user_id }).orderBy('seq').select('kind', 'amount', 'balance_after', 'reference')).to.deep.equal([
        { kind: 'plan_grant', amount: 150, balance_after: 150, reference: subscription.payment_id },
        { kind: 'reserve', amount: -50, balance_after: 100, reference: `spent-${subscription === unburned ? 0 : 1}` },
        { kind: 'plan_expired', amount: -100, balance_after: 0, reference: subscription.payment_id },
        { kind: 'plan_grant', amount: 150, balance_after: 150, reference: payment },
      ]);
      expect(await subscriptionRow(subscription.id)).to.include({ status: 'active', period: 2 });
    }
    await expectLedgerConsistent();
  });

  it('takes at most its size; the next batch takes the rest', async () => {
    const ended = await endedSubscriptions(3);
    expect(await startRenewalBatch(app, 2)).to.equal(2);
    expect(await startRenewalBatch(app, 2)).to.equal(1);
    for (const subscription of ended) expect(await renewalPayments(subscription.id)).to.have.length(1);
  });

  it('several schedulers at once, batches and the one-by-one path together: each renewal started once', async () => {
    const ended = await endedSubscriptions(8);
    const oneByOne = async () => {
      const due = await claimDueSubscriptions(db, 100, 30);
      return (await Promise.all(due.map((row) => advanceSubscription(app, row.id)))).filter((step) => step === 'renewal').length;
    };
    const started = await Promise.all([startRenewalBatch(app, 3), startRenewalBatch(app, 3), startRenewalBatch(app), oneByOne(), startRenewalBatch(app, 2), oneByOne()]);
    expect(started.reduce((sum, count) => sum + count, 0)).to.equal(8);
    for (const subscription of ended) {
      const payments = await renewalPayments(subscription.id);
      expect(payments).to.have.length(1);
      expect(await renewJobs(payments[0].id)).to.have.length(1);
      expect(await db('credit_transactions').where({ user_id: subscription.user_id, kind: 'plan_expired' })).to.have.length(1);
    }
    await expectLedgerConsistent();
  });

  it('a batch of charges with declines among them: the declined ones past_due, the others renewed and granted, each once', async () => {
    const ended = await endedSubscriptions(4);
    const declined = new Set([ended[1].id, ended[2].id]);
    for (const id of declined) expect(await operatorOnFirstOrder(bed, id, 'decline-next')).to.equal(200);
    expect(await startRenewalBatch(app)).to.equal(4);
    const payments = await Promise.all(ended.map(async (row) => (await renewalPayments(row.id))[0]));
    expect(await Promise.all(payments.map((payment) => chargeRenewal(app, payment.id)))).to.deep.equal(['applied', 'applied', 'applied', 'applied']);
    for (const [index, subscription] of ended.entries()) {
      const row = await subscriptionRow(subscription.id);
      const grants = await db('credit_transactions').where({ user_id: subscription.user_id, kind: 'plan_grant' });
      if (declined.has(subscription.id)) {
        expect((await paymentRow(payments[index].id)).status).to.equal('failed');
        expect(row).to.include({ status: 'past_due', period: 1, renewal_attempts: 1 });
        expect(grants).to.have.length(1);
      } else {
        expect((await paymentRow(payments[index].id)).status).to.equal('succeeded');
        expect(row).to.include({ status: 'active', period: 2, renewal_attempts: 0 });
        expect(grants).to.have.length(2);
      }
    }
    expect(bed.processor.charges).to.equal(4);
    // The batch does not take the past_due ones: their retry is the one-by-one path's, at its moment.
    await db('subscriptions').whereIn('id', [...declined]).update({ next_action_at: db.fn.now() });
    expect(await startRenewalBatch(app)).to.equal(0);
    await expectLedgerConsistent();
  });

  it('one cancelled between the batch and its charge: nothing charged for it, it ends at once; the others renew', async () => {
    const ended = await endedSubscriptions(3);
    expect(await startRenewalBatch(app)).to.equal(3);
    const [cancelled, ...others] = ended;
    const cancel = await bed.api.post(`/v1/subscriptions/${cancelled.id}/cancel`, { reason: 'quality' }, { token: tokens.get(cancelled.id)! });
    expect(cancel.status).to.equal(200);
    bed.processor.resetCounts();
    const outcomes = await Promise.all(ended.map(async (row) => chargeRenewal(app, (await renewalPayments(row.id))[0].id)));
    expect(outcomes).to.deep.equal(['closed', 'applied', 'applied']);
    expect(bed.processor.charges).to.equal(2);
    expect(await paymentRow((await renewalPayments(cancelled.id))[0].id)).to.include({ status: 'failed', closed_reason: 'not_registered' });
    expect(await subscriptionRow(cancelled.id)).to.include({ status: 'expired', ended_reason: 'canceled' });
    for (const row of others) expect(await subscriptionRow(row.id)).to.include({ status: 'active', period: 2 });
    await expectLedgerConsistent();
  });

  it('a worker that died after registering a batch\'s order, before the charge: the retried job charges it once', async () => {
    const [subscription] = await endedSubscriptions(1);
    expect(await startRenewalBatch(app)).to.equal(1);
    const [payment] = await renewalPayments(subscription.id);
    // The first run registered the order and kept it, then its process died.
    const order = await app.paymentProcessor.registerOrder(await orderRegistrationOf(db, app.config.publicBaseUrl, payment));
    await recordRegistration(db, payment.id, order);
    bed.processor.resetCounts();
    expect(await chargeRenewal(app, payment.id)).to.equal('applied');
    expect(await chargeRenewal(app, payment.id)).to.equal('skipped');
    expect(bed.processor.charges).to.equal(1);
    expect(bed.processor.registers).to.equal(0);
    expect(await subscriptionRow(subscription.id)).to.include({ status: 'active', period: 2 });
    expect(await db('credit_transactions').where({ user_id: subscription.user_id, kind: 'plan_grant' })).to.have.length(2);
  });

  it('a batch that fails midway (here: cancelled while it waits for a user row) leaves every one of its subscriptions due and untouched', async () => {
    const ended = await endedSubscriptions(2);
    const blocker = await db.transaction();
    try {
      await blocker('users').where({ id: ended[1].user_id }).forUpdate().first('id');
      const batch = startRenewalBatch(app).then(() => 'committed', () => 'failed');
      // The batch has started its renewals and waits for the locked owner: cancel it there.
      const waiting = await eventually(
        () => db.raw("select pid from pg_stat_activity where wait_event_type = 'Lock' and query like '%from users where id = any%'").then((result) => result.rows as { pid: number }[]),
        (rows) => rows.length === 1,
        5000,
      );
      await db.raw('select pg_cancel_backend(?)', [waiting[0].pid]);
      expect(await batch).to.equal('failed');
    } finally {
      await blocker.rollback();
    }
    for (const subscription of ended) {
      expect(await renewalPayments(subscription.id)).to.deep.equal([]);
      const row = await subscriptionRow(subscription.id);
      expect(row.renewal_attempts).to.equal(0);
      expect(row.next_action_at).to.not.equal(null);
    }
    expect(await db('credit_transactions').where({ kind: 'plan_expired' })).to.deep.equal([]);
    expect(await startRenewalBatch(app)).to.equal(2);
    await expectLedgerConsistent();
  });

  describe('renewal jobs charged in batches (chargeRenewals)', () => {
    const outcomesOf = async (paymentIds: string[]) => {
      const results = await chargeRenewals(app, paymentIds);
      return paymentIds.map((id) => {
        const result = results.get(id)!;
        return result.status === 'fulfilled' ? result.value : `rejected: ${(result.reason as Error).message}`;
      });
    };
    const grantsOf = (userId: string) => db('credit_transactions').where({ user_id: userId, kind: 'plan_grant' });

    it('one batch with a declined, a refused and an unknown payment among them: each gets its own outcome, the others renew once', async () => {
      const ended = await endedSubscriptions(4);
      expect(await operatorOnFirstOrder(bed, ended[1].id, 'decline-next')).to.equal(200);
      expect(await startRenewalBatch(app)).to.equal(4);
      // The processor knows no such card: it refuses the charge, taken as a decline.
      await db('subscriptions').where({ id: ended[2].id }).update({ card_binding_id: 'no-such-binding' });
      const payments = await Promise.all(ended.map(async (row) => (await renewalPayments(row.id))[0]));
      bed.processor.resetCounts();
      const unknown = '00000000-0000-4000-8000-000000000000';
      expect(await outcomesOf([...payments.map((payment) => payment.id), unknown])).to.deep.equal(['applied', 'applied', 'refused', 'applied', 'skipped']);
      expect(bed.processor.charges).to.equal(4);
      for (const index of [0, 3]) {
        expect((await paymentRow(payments[index].id)).status).to.equal('succeeded');
        expect(await subscriptionRow(ended[index].id)).to.include({ status: 'active', period: 2, renewal_attempts: 0 });
        expect(await grantsOf(ended[index].user_id)).to.have.length(2);
      }
      for (const index of [1, 2]) {
        expect((await paymentRow(payments[index].id)).status).to.equal('failed');
        expect(await subscriptionRow(ended[index].id)).to.include({ status: 'past_due', period: 1, renewal_attempts: 1 });
        expect(await grantsOf(ended[index].user_id)).to.have.length(1);
      }
      await expectLedgerConsistent();
    });

    it('two workers with the same batch at once: each period charged once, granted once, burned once', async () => {
      const ended = await endedSubscriptions(3);
      expect(await startRenewalBatch(app)).to.equal(3);
      const paymentIds = await Promise.all(ended.map(async (row) => (await renewalPayments(row.id))[0].id));
      bed.processor.resetCounts();
      const [first, second] = await Promise.all([outcomesOf(paymentIds), outcomesOf([...paymentIds].reverse())]);
      // Whichever run lost a race found the payment done, or the order charged (then applying it changed nothing).
      for (const outcome of [...first, ...second]) expect(outcome).to.be.oneOf(['applied', 'skipped']);
      // One order each, captured once (the loser's charge call is refused: the order is no longer untried).
      for (const paymentId of paymentIds) {
        expect([...bed.simulator.orders.values()].filter((order) => order.orderNumber === paymentId)).to.have.length(1);
      }
      for (const subscription of ended) {
        expect(await subscriptionRow(subscription.id)).to.include({ status: 'active', period: 2 });
        expect(await grantsOf(subscription.user_id)).to.have.length(2);
        expect(await db('credit_transactions').where({ user_id: subscription.user_id, kind: 'plan_expired' })).to.have.length(1);
        expect(await db('payments').where({ subscription_id: subscription.id, status: 'succeeded' })).to.have.length(2);
      }
      await expectLedgerConsistent();
    });

    it('a batch whose writing fails for one payment: the others are written on their own, that one is left for its retry', async () => {
      const ended = await endedSubscriptions(3);
      expect(await startRenewalBatch(app)).to.equal(3);
      const payments = await Promise.all(ended.map(async (row) => (await renewalPayments(row.id))[0]));
      await db.raw("create function test_refuse_renewal() returns trigger language plpgsql as $$ begin raise exception 'refused by the test'; end $$");
      await db.raw(`create trigger test_refuse_renewal before update on payments for each row when (new.id = '${payments[1].id}' and new.status = 'succeeded') execute function test_refuse_renewal()`);
      try {
        const outcomes = await outcomesOf(payments.map((payment) => payment.id));
        expect([outcomes[0], outcomes[2]]).to.deep.equal(['applied', 'applied']);
        expect(outcomes[1]).to.match(/^rejected: .*refused by the test$/s);
      } finally {
        await db.raw('drop trigger test_refuse_renewal on payments');
        await db.raw('drop function test_refuse_renewal()');
      }
      expect((await paymentRow(payments[1].id)).status).to.equal('created');
      expect(await subscriptionRow(ended[1].id)).to.include({ status: 'active', period: 1 });
      expect(await grantsOf(ended[1].user_id)).to.have.length(1);
      for (const index of [0, 2]) expect(await subscriptionRow(ended[index].id)).to.include({ status: 'active', period: 2 });
      // Its retry reads the charged order and applies it, charging nothing again.
      bed.processor.resetCounts();
      expect(await outcomesOf([payments[1].id])).to.deep.equal(['applied']);
      expect(bed.processor.charges).to.equal(0);
      expect(await subscriptionRow(ended[1].id)).to.include({ status: 'active', period: 2 });
      await expectLedgerConsistent();
    });
  });

  describe('the processor\'s notification about a renewal charge', () => {
    function notify(orderId: string, paymentId: string): Promise<Response> {
      const params = { mdOrder: orderId, orderNumber: paymentId, operation: 'deposited', status: '1' };
      return fetch(`${bed.app.url}${WEBHOOK_PATH}`, { method: 'POST', body: new URLSearchParams({ ...params, checksum: notificationChecksum(params, notificationSecret) }) });
    }

    /** A batch-started renewal whose order a worker registered and charged, the outcome not applied yet. */
    async function chargedNotApplied() {
      const [subscription] = await endedSubscriptions(1);
      await startRenewalBatch(app);
      const [payment] = await renewalPayments(subscription.id);
      const order = await app.paymentProcessor.registerOrder(await orderRegistrationOf(db, app.config.publicBaseUrl, payment));
      await recordRegistration(db, payment.id, order);
      const delivered = bed.simulator.notificationsDelivered();
      await app.paymentProcessor.chargeBinding({ orderId: order.orderId, bindingId: subscription.card_binding_id! });
      // The simulator's own notification of the charge is answered (while the job is pending) before
      // the test goes on: answered later, after the test ended the job, it would read the order too.
      await eventually(async () => bed.simulator.notificationsDelivered(), (count) => count > delivered, 5000);
      bed.processor.resetCounts();
      return { subscription, payment, orderId: order.orderId };
    }

    it('while its job has not ended, reads nothing and changes nothing: the job applies the outcome', async () => {
      const { subscription, payment, orderId } = await chargedNotApplied();
      expect((await notify(orderId, payment.id)).status).to.equal(200);
      expect(bed.processor.statuses).to.equal(0);
      expect((await paymentRow(payment.id)).status).to.equal('created');
      // The job (here retried after the charge) reads the status and applies it.
      expect(await chargeRenewal(app, payment.id)).to.equal('applied');
      expect(bed.processor.charges).to.equal(0);
      expect(await subscriptionRow(subscription.id)).to.include({ status: 'active', period: 2 });
    });

    it('once its job has ended without the outcome, reads the order and applies it like any notification', async () => {
      const { subscription, payment, orderId } = await chargedNotApplied();
      const [job] = await app.boss.fetch('subscription-renew');
      expect(job.id).to.equal(payment.id);
      await app.boss.complete('subscription-renew', job.id);
      expect((await notify(orderId, payment.id)).status).to.equal(200);
      expect(bed.processor.statuses).to.equal(1);
      expect((await paymentRow(payment.id)).status).to.equal('succeeded');
      expect(await subscriptionRow(subscription.id)).to.include({ status: 'active', period: 2 });
    });
  });
});
