import { expect } from 'chai';
import type { ProductRow } from '../../../db/payments/model';
import { reconcilePayments } from '../../../workers/payments/reconciliation';
import { services } from '../../harness';
import { balanceOf, createPayment, freshShowcase, ledgerOf, onTestbed, operator, payAs, paymentRow, spend, startTestbed, waitForStatus, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

/**
 * Every row of the contract's payment state table, driven through the processor simulator over
 * HTTP: the payer on the hosted page, the operator in the processor's cabinet, signed notifications.
 */
describe('payments: the state table', () => {
  const reconcileAtOnce = { PAYMENT_RECONCILE_FIRST_CHECK_S: '0', PAYMENT_RECONCILE_INTERVAL_S: '0', PAYMENT_LATE_CHECK_INTERVAL_S: '0', PAYMENT_REFRESH_MIN_INTERVAL_S: '0' };
  let bed: Testbed;
  let products: Record<string, ProductRow>;
  before(async () => { bed = await startTestbed({ config: reconcileAtOnce }); });
  after(() => bed.close());
  beforeEach(async () => {
    products = await freshShowcase();
    bed.simulator.setFault(null);
  });

  const get = (user: { token: string }, id: string) => bed.api.get(`/v1/payments/${id}`, { token: user.token });

  describe('created → succeeded: the processor confirms capture; credits credited, paid_at set', () => {
    it('by the signed webhook', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_500.id);
      const redirect = await payAs(payment.payment_url, 'success');
      expect(redirect.status).to.equal(303);
      expect(redirect.headers.get('location')).to.match(/\/v1\/payments\/.+\/return$/);

      await waitForStatus(payment.id, 'succeeded');

      const answer = await get(user, payment.id);
      expect(answer.body).to.include({ status: 'succeeded', credits: 500 });
      expect(Date.parse(answer.body.paid_at)).to.be.closeTo(Date.now(), 10_000);
      expect(answer.body.receipt_url).to.match(/\/sim\/processor\/receipts\//);
      expect(await balanceOf(user.id)).to.equal(500);
      expect(await ledgerOf(user.id)).to.deep.equal([{ kind: 'purchase', amount: 500, reference: payment.id }]);
    });

    it('by server-to-server reconciliation, without webhook or refresh', async () => {
      await onTestbed({ notifications: false, config: { PAYMENT_RECONCILE_FIRST_CHECK_S: '0' } }, async (quiet) => {
        const user = await makeUser();
        const payment = await createPayment(quiet, user, products.pack_100.id);
        await payAs(payment.payment_url, 'success');
        expect((await paymentRow(payment.id)).status).to.equal('created');

        await reconcilePayments(quiet.app.services, 'open');

        expect((await paymentRow(payment.id)).status).to.equal('succeeded');
        expect(await balanceOf(user.id)).to.equal(100);
      });
    });

    it('by POST /v1/payments/{id}/refresh when the payer returns', async () => {
      await onTestbed({ notifications: false }, async (quiet) => {
        const user = await makeUser();
        const payment = await createPayment(quiet, user, products.pack_100.id, { method: 'sbp' });
        expect(await operator(quiet, payment.id, 'sbp-pay')).to.equal(200);

        const refreshed = await quiet.api.post(`/v1/payments/${payment.id}/refresh`, undefined, { token: user.token });

        expect(refreshed.status).to.equal(200);
        expect(refreshed.body).to.include({ status: 'succeeded', method: 'sbp' });
        expect(refreshed.body).not.to.have.property('payment_url');
        expect(await balanceOf(user.id)).to.equal(100);
      });
    });
  });

  describe('created → failed: the processor declines', () => {
    for (const outcome of ['insufficient_funds', 'system_error'] as const) {
      it(`${outcome}: failed, nothing credited, the slot freed`, async () => {
        const user = await makeUser();
        const payment = await createPayment(bed, user, products.pack_100.id);
        const redirect = await payAs(payment.payment_url, outcome);
        expect(redirect.headers.get('location')).to.match(/\/fail$/);
        await waitForStatus(payment.id, 'failed');
        expect((await get(user, payment.id)).body).to.include({ status: 'failed', paid_at: null, receipt_url: null });
        expect(await balanceOf(user.id)).to.equal(0);
      });
    }
  });

  describe('created → expired: only when the processor declares the order expired', () => {
    it('the operator expires the order: expired, slot released', async () => {
      const user = await makeUser();
      const open = [];
      for (let i = 0; i < 5; i += 1) open.push(await createPayment(bed, user, products.pack_100.id));
      expect(await operator(bed, open[0].id, 'expire')).to.equal(200);
      await waitForStatus(open[0].id, 'expired');
      // The slot is free again.
      await createPayment(bed, user, products.pack_100.id);
    });

    it('our clock past the 30 minutes is not enough: it stays created until the processor says expired', async () => {
      await onTestbed({ notifications: false, config: { PAYMENT_RECONCILE_FIRST_CHECK_S: '0', PAYMENT_RECONCILE_INTERVAL_S: '0' } }, async (quiet) => {
        const user = await makeUser();
        const payment = await createPayment(quiet, user, products.pack_100.id);
        // Our own record says the order's life is over, the processor's clock does not yet.
        await services().db('payments').where({ id: payment.id }).update({ expires_at: services().db.raw("now() - interval '10 minutes'") });
        await reconcilePayments(quiet.app.services, 'open');
        expect((await paymentRow(payment.id)).status).to.equal('created');

        quiet.advanceClock(30 * 60_000);
        await reconcilePayments(quiet.app.services, 'open');
        expect((await paymentRow(payment.id)).status).to.equal('expired');
      });
    });
  });

  describe('failed → succeeded: the payer retries on the same processor page and pays', () => {
    it('credits once after the earlier decline', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      await payAs(payment.payment_url, 'system_error');
      await waitForStatus(payment.id, 'failed');

      expect((await payAs(payment.payment_url, 'success')).status).to.equal(303);

      await waitForStatus(payment.id, 'succeeded');
      expect(await balanceOf(user.id)).to.equal(100);
    });
  });

  describe('expired → succeeded: the processor confirms capture after our term ended (rare)', () => {
    it('credits the late capture', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id, { method: 'sbp' });
      await operator(bed, payment.id, 'expire');
      await waitForStatus(payment.id, 'expired');

      expect(await operator(bed, payment.id, 'late-capture')).to.equal(200);

      await waitForStatus(payment.id, 'succeeded');
      expect(await balanceOf(user.id)).to.equal(100);
    });
  });

  describe('succeeded → refunded: refund or chargeback; remaining credits revoked, spent ones not, never negative', () => {
    it('an operator refund with the credits untouched revokes them all', async () => {
      const user = await makeUser({ balance: 50 });
      const payment = await createPayment(bed, user, products.pack_100.id);
      await payAs(payment.payment_url, 'success');
      await waitForStatus(payment.id, 'succeeded');
      expect(await balanceOf(user.id)).to.equal(150);

      await operator(bed, payment.id, 'refund');

      await waitForStatus(payment.id, 'refunded');
      expect(await balanceOf(user.id)).to.equal(50);
      const answer = await get(user, payment.id);
      expect(answer.body.status).to.equal('refunded');
      // The receipt and the paid time are permanent.
      expect(answer.body.receipt_url).to.be.a('string');
      expect(answer.body.paid_at).to.be.a('string');
      expect((await ledgerOf(user.id)).slice(1)).to.deep.equal([
        { kind: 'purchase', amount: 100, reference: payment.id },
        { kind: 'purchase_revoke', amount: -100, reference: payment.id },
      ]);
    });

    it('a chargeback after part of the credits were spent takes only what is left; the balance stays at zero', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_500.id);
      await payAs(payment.payment_url, 'success');
      await waitForStatus(payment.id, 'succeeded');
      await spend(user.id, 320);

      await operator(bed, payment.id, 'chargeback');

      await waitForStatus(payment.id, 'refunded');
      await eventually(() => balanceOf(user.id), (balance) => balance === 0, 3000);
      const ledger = await ledgerOf(user.id);
      expect(ledger.at(-1)).to.deep.equal({ kind: 'purchase_revoke', amount: -180, reference: payment.id });
    });

    it('a refund when every credit was spent revokes nothing and records the revoke once', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      await payAs(payment.payment_url, 'success');
      await waitForStatus(payment.id, 'succeeded');
      await spend(user.id, 100);
      await operator(bed, payment.id, 'refund');
      await waitForStatus(payment.id, 'refunded');
      await reconcilePayments(bed.app.services, 'paid');
      expect(await balanceOf(user.id)).to.equal(0);
      expect((await ledgerOf(user.id)).filter((entry) => entry.kind === 'purchase_revoke')).to.deep.equal([{ kind: 'purchase_revoke', amount: 0, reference: payment.id }]);
    });
  });

  describe('terminal and non-terminal statuses', () => {
    it('an unknown issuer outcome leaves the payment created until reconciliation resolves it', async () => {
      // No notifications: the processor's own would race the reconciliation this proves.
      await onTestbed({ notifications: false, config: reconcileAtOnce }, async (quiet) => {
        const user = await makeUser();
        const payment = await createPayment(quiet, user, products.pack_100.id);
        expect((await payAs(payment.payment_url, 'unknown')).status).to.equal(200);
        await reconcilePayments(quiet.app.services, 'open');
        expect((await paymentRow(payment.id)).status).to.equal('created');

        // The issuer answers later and the payer's money is captured.
        await operator(quiet, payment.id, 'sbp-pay');
        expect((await paymentRow(payment.id)).status).to.equal('created');
        await reconcilePayments(quiet.app.services, 'open');
        expect((await paymentRow(payment.id)).status).to.equal('succeeded');
        expect(await balanceOf(user.id)).to.equal(100);
      });
    });

    it('a refunded payment never changes again, whatever the processor or a replay says', async () => {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      await payAs(payment.payment_url, 'success');
      await waitForStatus(payment.id, 'succeeded');
      await operator(bed, payment.id, 'refund');
      await waitForStatus(payment.id, 'refunded');
      // Refresh and reconciliation after the end change nothing.
      await bed.api.post(`/v1/payments/${payment.id}/refresh`, undefined, { token: user.token });
      await services().db('payments').where({ id: payment.id }).update({ next_check_at: services().db.fn.now() });
      await reconcilePayments(bed.app.services, 'paid');
      expect((await paymentRow(payment.id)).status).to.equal('refunded');
      expect(await balanceOf(user.id)).to.equal(0);
    });
  });
});
