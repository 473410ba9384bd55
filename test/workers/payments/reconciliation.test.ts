import { expect } from 'chai';
import type { Knex } from 'knex';
import type { ProductRow } from '../../../db/payments/model';
import { reconcilePayments, startPaymentReconciliation } from '../../../workers/payments/reconciliation';
import { services } from '../../harness';
import { balanceOf, createPayment, freshShowcase, ledgerOf, operator, payAs, paymentRow, startTestbed, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';

describe('payments: reconciliation and the chargeback watch', () => {
  let bed: Testbed;
  let products: Record<string, ProductRow>;
  // No webhook: reconciliation alone must find the truth.
  before(async () => {
    bed = await startTestbed({ notifications: false });
    db = services().db;
  });
  after(() => bed.close());
  beforeEach(async () => {
    products = await freshShowcase();
    bed.simulator.setFault(null);
    bed.processor.resetCounts();
  });

  let db: Knex;
  const makeDue = (id: string) => db('payments').where({ id }).update({ next_check_at: db.raw("now() - interval '1 second'") });
  const secondsUntilNextCheck = async (id: string) =>
    (await db('payments').where({ id }).first(db.raw('extract(epoch from next_check_at - now())::float as seconds'))).seconds as number | null;

  it('checks a new payment a minute after creation, then every PAYMENT_RECONCILE_INTERVAL_S, never before it is due', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    expect(await secondsUntilNextCheck(payment.id)).to.be.within(55, 60);
    await payAs(payment.payment_url, 'unknown');

    expect(await reconcilePayments(bed.app.services, 'open')).to.deep.equal({ checked: 0, unavailable: 0, closed: 0 });
    expect(bed.processor.statuses).to.equal(0);

    await makeDue(payment.id);
    expect((await reconcilePayments(bed.app.services, 'open')).checked).to.equal(1);
    expect((await paymentRow(payment.id)).status).to.equal('created');
    expect(await secondsUntilNextCheck(payment.id)).to.be.within(115, 120);
  });

  it('confirms a success that no webhook or refresh reported at the next due check (within minutes, well inside 15)', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_1500.id);
    await payAs(payment.payment_url, 'success');
    await makeDue(payment.id);
    await reconcilePayments(bed.app.services, 'open');
    expect((await paymentRow(payment.id)).status).to.equal('succeeded');
    expect(await balanceOf(user.id)).to.equal(1500);
    // Now on the chargeback watch, checked every PAYMENT_CHARGEBACK_CHECK_INTERVAL_S (6 h).
    expect(await secondsUntilNextCheck(payment.id)).to.be.within(21_590, 21_600);
  });

  it('watches failed and expired payments for a late success, and stops after PAYMENT_LATE_WATCH_S', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    await payAs(payment.payment_url, 'system_error');
    await makeDue(payment.id);
    await reconcilePayments(bed.app.services, 'open');
    expect((await paymentRow(payment.id)).status).to.equal('failed');
    expect(await secondsUntilNextCheck(payment.id)).to.be.within(590, 600);

    await payAs(payment.payment_url, 'success');
    await makeDue(payment.id);
    await reconcilePayments(bed.app.services, 'open');
    expect((await paymentRow(payment.id)).status).to.equal('succeeded');

    const old = await createPayment(bed, user, products.pack_100.id);
    await operator(bed, old.id, 'expire');
    await makeDue(old.id);
    await reconcilePayments(bed.app.services, 'open');
    expect((await paymentRow(old.id)).status).to.equal('expired');
    // Three hours later: one last check, then the watch ends.
    await db('payments').where({ id: old.id }).update({ created_at: db.raw("now() - interval '4 hours'"), next_check_at: db.fn.now() });
    await reconcilePayments(bed.app.services, 'open');
    expect((await paymentRow(old.id)).next_check_at).to.equal(null);
  });

  it('the chargeback watch finds a refund or chargeback no webhook reported, for 45 days', async () => {
    const user = await makeUser();
    const refunded = await createPayment(bed, user, products.pack_100.id);
    const charged = await createPayment(bed, user, products.pack_500.id);
    for (const payment of [refunded, charged]) {
      await payAs(payment.payment_url, 'success');
      await makeDue(payment.id);
    }
    await reconcilePayments(bed.app.services, 'open');
    expect(await balanceOf(user.id)).to.equal(600);
    await operator(bed, refunded.id, 'refund');
    await operator(bed, charged.id, 'chargeback');
    // Only the charged one is due now; the other is checked at its turn.
    await makeDue(charged.id);

    await reconcilePayments(bed.app.services, 'paid');
    expect((await paymentRow(charged.id)).status).to.equal('refunded');
    expect((await paymentRow(refunded.id)).status).to.equal('succeeded');
    expect(await balanceOf(user.id)).to.equal(100);

    // Past the 45 days: one last check, and then it is no longer watched.
    await db('payments').where({ id: refunded.id }).update({ paid_at: db.raw("now() - interval '46 days'"), next_check_at: db.fn.now() });
    await reconcilePayments(bed.app.services, 'paid');
    const row = await paymentRow(refunded.id);
    expect(row.status).to.equal('refunded');
    expect(row.next_check_at).to.equal(null);
    expect(await balanceOf(user.id)).to.equal(0);
  });

  it('closes a payment left without an order for an hour (its process died and no retry came)', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.starter_pack.id);
    await db('payments').where({ id: payment.id }).update({ processor_order_id: null, payment_url: null, next_check_at: db.fn.now() });
    await reconcilePayments(bed.app.services, 'open');
    expect((await paymentRow(payment.id)).status).to.equal('created');

    await db('payments').where({ id: payment.id }).update({ created_at: db.raw("now() - interval '61 minutes'"), next_check_at: db.fn.now() });
    expect((await reconcilePayments(bed.app.services, 'open')).closed).to.equal(1);
    expect(await paymentRow(payment.id)).to.include({ status: 'failed', closed_reason: 'not_registered' });
    // The starter pack's limit is free again.
    await createPayment(bed, user, products.starter_pack.id);
  });

  describe('the processor stops answering during reconciliation (fault test)', () => {
    for (const fault of ['hang', 'down'] as const) {
      it(`${fault}: nothing is lost or double-credited, and reconciliation catches up once the fault clears`, async () => {
        const user = await makeUser();
        const paid = [];
        for (let i = 0; i < 3; i += 1) {
          const payment = await createPayment(bed, user, products.pack_100.id);
          await payAs(payment.payment_url, 'success');
          await makeDue(payment.id);
          paid.push(payment);
        }
        bed.simulator.setFault(fault);

        const started = Date.now();
        const during = await reconcilePayments(bed.app.services, 'open');

        // One silent answer stops the round: it does not wait out a timeout per payment.
        expect(during.unavailable).to.be.at.least(1);
        expect(during.checked).to.equal(0);
        expect(Date.now() - started).to.be.below(2000);
        for (const payment of paid) expect((await paymentRow(payment.id)).status).to.equal('created');
        expect(await balanceOf(user.id)).to.equal(0);

        bed.simulator.setFault(null);
        // Still inside the interval nothing happens; once due, all are found.
        for (const payment of paid) await makeDue(payment.id);
        const after = await reconcilePayments(bed.app.services, 'open');
        expect(after.checked).to.equal(3);
        await reconcilePayments(bed.app.services, 'open');
        for (const payment of paid) expect((await paymentRow(payment.id)).status).to.equal('succeeded');
        expect(await balanceOf(user.id)).to.equal(300);
        expect((await ledgerOf(user.id)).filter((entry) => entry.kind === 'purchase')).to.have.length(3);
      });
    }
  });

  it('the scheduler role runs both jobs on pg-boss cron', async () => {
    const { boss } = services();
    const jobs = await startPaymentReconciliation(services());
    try {
      const schedules = (await boss.getSchedules()).map((schedule: { name: string; cron: string }) => [schedule.name, schedule.cron]);
      expect(schedules).to.deep.include.members([['payment-reconcile', '* * * * *'], ['payment-chargeback-watch', '*/5 * * * *']]);
    } finally {
      await jobs.stop();
      await boss.unschedule('payment-reconcile');
      await boss.unschedule('payment-chargeback-watch');
    }
  });
});
