import { expect } from 'chai';
import pg from 'pg';
import { WEBHOOK_PATH } from '../../../api/payments/webhook';
import type { ProductRow } from '../../../db/payments/model';
import { notificationChecksum } from '../../../clients/payment-processor/signature';
import { reconcilePayments } from '../../../workers/payments/reconciliation';
import { databaseUrl, services } from '../../harness';
import { balanceOf, createPayment, freshShowcase, ledgerOf, notificationSecret, operator, payAs, paymentRow, startTestbed, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

/** Credits follow the processor exactly once, whichever way and however often the truth arrives. */
describe('payments: credits exactly once', () => {
  let bed: Testbed;
  let products: Record<string, ProductRow>;
  before(async () => {
    bed = await startTestbed({ notifications: false, config: { PAYMENT_RECONCILE_FIRST_CHECK_S: '0', PAYMENT_RECONCILE_INTERVAL_S: '0', PAYMENT_LATE_CHECK_INTERVAL_S: '0', PAYMENT_REFRESH_MIN_INTERVAL_S: '0' } });
  });
  after(() => bed.close());
  beforeEach(async () => { products = await freshShowcase(); });

  function notify(orderId: string, paymentId: string, operation = 'deposited'): Promise<Response> {
    const params = { mdOrder: orderId, orderNumber: paymentId, operation, status: '1' };
    return fetch(`${bed.app.url}${WEBHOOK_PATH}`, { method: 'POST', body: new URLSearchParams({ ...params, checksum: notificationChecksum(params, notificationSecret) }) });
  }

  it('a concurrent webhook and refresh credit once', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_500.id);
    await payAs(payment.payment_url, 'success');
    const { processor_order_id: orderId } = await paymentRow(payment.id);

    const [webhook, refresh] = await Promise.all([
      notify(orderId!, payment.id),
      bed.api.post(`/v1/payments/${payment.id}/refresh`, undefined, { token: user.token }),
    ]);

    expect(webhook.status).to.equal(200);
    expect(refresh.body.status).to.equal('succeeded');
    expect(await balanceOf(user.id)).to.equal(500);
    expect(await ledgerOf(user.id)).to.deep.equal([{ kind: 'purchase', amount: 500, reference: payment.id }]);
  });

  it('any mix of webhooks, refreshes and reconciliation rounds, concurrently and twice, credits once', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    await payAs(payment.payment_url, 'success');
    const { processor_order_id: orderId } = await paymentRow(payment.id);
    const refresh = () => bed.api.post(`/v1/payments/${payment.id}/refresh`, undefined, { token: user.token });

    await Promise.all([
      notify(orderId!, payment.id), notify(orderId!, payment.id), refresh(), refresh(),
      reconcilePayments(bed.app.services, 'open'), reconcilePayments(bed.app.services, 'open'), notify(orderId!, payment.id),
    ]);
    await Promise.all([notify(orderId!, payment.id), refresh(), reconcilePayments(bed.app.services, 'open')]);

    expect((await paymentRow(payment.id)).status).to.equal('succeeded');
    expect(await balanceOf(user.id)).to.equal(100);
    expect(await ledgerOf(user.id)).to.have.length(1);
  });

  it('a concurrent refund seen by webhook, refresh and the chargeback watch revokes once', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    await payAs(payment.payment_url, 'success');
    await bed.api.post(`/v1/payments/${payment.id}/refresh`, undefined, { token: user.token });
    const { processor_order_id: orderId } = await paymentRow(payment.id);
    await operator(bed, payment.id, 'refund');
    await services().db('payments').where({ id: payment.id }).update({ next_check_at: services().db.fn.now() });

    await Promise.all([
      notify(orderId!, payment.id, 'refunded'), notify(orderId!, payment.id, 'refunded'),
      reconcilePayments(bed.app.services, 'paid'), reconcilePayments(bed.app.services, 'paid'),
    ]);

    expect((await paymentRow(payment.id)).status).to.equal('refunded');
    expect(await balanceOf(user.id)).to.equal(0);
    expect((await ledgerOf(user.id)).map((entry) => entry.kind)).to.deep.equal(['purchase', 'purchase_revoke']);
  });

  it('a refund seen before the capture was ever seen credits and revokes, so the history tells what happened', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    await payAs(payment.payment_url, 'success');
    await operator(bed, payment.id, 'refund');

    await reconcilePayments(bed.app.services, 'open');

    expect((await paymentRow(payment.id)).status).to.equal('refunded');
    expect(await balanceOf(user.id)).to.equal(0);
    expect((await ledgerOf(user.id)).map((entry) => [entry.kind, entry.amount])).to.deep.equal([['purchase', 100], ['purchase_revoke', -100]]);
  });

  it('announces every status change on payment_status with {id, user_id, status, paid_at}', async () => {
    const listener = new pg.Client({ connectionString: databaseUrl() });
    await listener.connect();
    const heard: Record<string, unknown>[] = [];
    listener.on('notification', (message) => heard.push(JSON.parse(message.payload!)));
    await listener.query('listen payment_status');
    try {
      const user = await makeUser();
      const payment = await createPayment(bed, user, products.pack_100.id);
      await payAs(payment.payment_url, 'insufficient_funds');
      await reconcilePayments(bed.app.services, 'open');
      await payAs(payment.payment_url, 'success');
      await reconcilePayments(bed.app.services, 'open');
      await operator(bed, payment.id, 'refund');
      await services().db('payments').where({ id: payment.id }).update({ next_check_at: services().db.fn.now() });
      await reconcilePayments(bed.app.services, 'paid');

      await eventually(async () => heard.length, (count) => count >= 3, 3000);
      const row = await paymentRow(payment.id);
      expect(heard).to.deep.equal([
        { id: payment.id, user_id: user.id, status: 'failed', paid_at: null },
        { id: payment.id, user_id: user.id, status: 'succeeded', paid_at: row.paid_at!.toISOString() },
        { id: payment.id, user_id: user.id, status: 'refunded', paid_at: row.paid_at!.toISOString() },
      ]);
    } finally {
      await listener.end();
    }
  });
});
