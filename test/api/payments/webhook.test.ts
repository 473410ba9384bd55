import { expect } from 'chai';
import { WEBHOOK_PATH } from '../../../api/payments/webhook';
import type { ProductRow } from '../../../db/payments/model';
import { notificationChecksum } from '../../../clients/payment-processor/signature';
import { capturingLogger, services, startTestApp } from '../../harness';
import { balanceOf, createPayment, freshShowcase, notificationSecret, onTestbed, operator, payAs, paymentRow, startTestbed, waitForStatus, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

/** Signed notifications sent by hand, as a processor would, to the webhook endpoint. */
describe('payments: the processor webhook', () => {
  let bed: Testbed;
  let products: Record<string, ProductRow>;
  const captured = capturingLogger();
  // The simulator's own notifications go nowhere here: every notification in these tests is ours.
  before(async () => { bed = await startTestbed({ notifications: false }); });
  after(() => bed.close());
  beforeEach(async () => {
    products = await freshShowcase();
    bed.processor.resetCounts();
  });

  function post(params: Record<string, string>): Promise<Response> {
    return fetch(`${bed.app.url}${WEBHOOK_PATH}`, { method: 'POST', body: new URLSearchParams(params) });
  }

  function signed(params: Record<string, string>, secret = notificationSecret): Record<string, string> {
    return { ...params, checksum: notificationChecksum(params, secret) };
  }

  async function paidPayment() {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    await payAs(payment.payment_url, 'success');
    const { processor_order_id: orderId } = await paymentRow(payment.id);
    return { user, payment, orderId: orderId!, params: { mdOrder: orderId!, orderNumber: payment.id, operation: 'deposited', status: '1' } };
  }

  it('a valid notification makes the service read the order and apply it: succeeded, credited, paid_at set', async () => {
    const { user, payment, params } = await paidPayment();
    expect((await paymentRow(payment.id)).status).to.equal('created');

    const answer = await post(signed(params));

    expect(answer.status).to.equal(200);
    const row = await paymentRow(payment.id);
    expect(row.status).to.equal('succeeded');
    expect(row.paid_at).to.be.instanceOf(Date);
    expect(await balanceOf(user.id)).to.equal(100);
    expect(bed.processor.statuses).to.equal(1);
  });

  it('an unsigned notification is refused with 400 and changes nothing; it is logged', async () => {
    const { user, payment, params } = await paidPayment();
    const logged = await startTestbedWithLog();
    try {
      const answer = await fetch(`${logged.app.url}${WEBHOOK_PATH}`, { method: 'POST', body: new URLSearchParams(params) });
      expect(answer.status).to.equal(400);
    } finally {
      await logged.close();
    }
    expect((await paymentRow(payment.id)).status).to.equal('created');
    expect(await balanceOf(user.id)).to.equal(0);
    expect(captured.lines().some((line) => line.msg === 'payments: unsigned notification ignored')).to.equal(true);
  });

  it('a notification with a wrong signature, or changed after signing, is refused with 403 and changes nothing', async () => {
    const { user, payment, params } = await paidPayment();
    for (const forged of [signed(params, 'another-secret-of-some-attacker-000000'), { ...signed({ ...params, status: '0' }), status: '1' }, { ...params, checksum: 'nothex' }]) {
      expect((await post(forged)).status).to.equal(403);
    }
    expect((await paymentRow(payment.id)).status).to.equal('created');
    expect(await balanceOf(user.id)).to.equal(0);
    expect(bed.processor.statuses).to.equal(0);
  });

  it('a signed notification about an unknown payment or another order changes nothing (404)', async () => {
    const { payment, params } = await paidPayment();
    const other = await createPayment(bed, await makeUser(), products.pack_100.id);
    expect((await post(signed({ ...params, orderNumber: other.id }))).status).to.equal(404);
    expect((await post(signed({ ...params, orderNumber: 'not-a-payment' }))).status).to.equal(404);
    expect((await paymentRow(payment.id)).status).to.equal('created');
    expect((await paymentRow(other.id)).status).to.equal('created');
  });

  it('accepts the notification as GET query parameters too', async () => {
    const { payment, params } = await paidPayment();
    const answer = await fetch(`${bed.app.url}${WEBHOOK_PATH}?${new URLSearchParams(signed(params))}`);
    expect(answer.status).to.equal(200);
    expect((await paymentRow(payment.id)).status).to.equal('succeeded');
  });

  it('duplicates are harmless: the same notification five times credits once', async () => {
    const { user, payment, params } = await paidPayment();
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(signed(params))));
    expect(answers.map((answer) => answer.status)).to.deep.equal([200, 200, 200, 200, 200]);
    expect((await paymentRow(payment.id)).status).to.equal('succeeded');
    expect(await balanceOf(user.id)).to.equal(100);
    expect(await services().db('credit_transactions').where({ user_id: user.id, kind: 'purchase' })).to.have.length(1);
  });

  it('a success about a payment already succeeded is answered without a status query; any other operation still asks', async () => {
    const { payment, params, orderId } = await paidPayment();
    expect((await post(signed(params))).status).to.equal(200);
    expect(bed.processor.statuses).to.equal(1);
    expect((await post(signed(params))).status).to.equal(200);
    expect(bed.processor.statuses, 'the repeat asks nothing').to.equal(1);
    expect((await post(signed({ mdOrder: orderId, orderNumber: payment.id, operation: 'refunded', status: '1' }))).status).to.equal(200);
    expect(bed.processor.statuses, 'a refund notification is read').to.equal(2);
    expect((await paymentRow(payment.id)).status).to.equal('succeeded');
  });

  it('out of order is harmless: a late "declined" after the success, or a "deposited" that says nothing new, changes nothing', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    await payAs(payment.payment_url, 'insufficient_funds');
    const { processor_order_id: orderId } = await paymentRow(payment.id);
    const declined = signed({ mdOrder: orderId!, orderNumber: payment.id, operation: 'declined', status: '0' });
    // The "deposited" notification overtakes the "declined" one, and the payer paid on the second try.
    await payAs(payment.payment_url, 'success');
    expect((await post(signed({ mdOrder: orderId!, orderNumber: payment.id, operation: 'deposited', status: '1' }))).status).to.equal(200);
    expect((await paymentRow(payment.id)).status).to.equal('succeeded');

    expect((await post(declined)).status).to.equal(200);

    expect((await paymentRow(payment.id)).status).to.equal('succeeded');
    expect(await balanceOf(user.id)).to.equal(100);
  });

  it('a notification that arrives before the event it announces (the order still registered) changes nothing', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    const { processor_order_id: orderId } = await paymentRow(payment.id);
    expect((await post(signed({ mdOrder: orderId!, orderNumber: payment.id, operation: 'deposited', status: '1' }))).status).to.equal(200);
    expect((await paymentRow(payment.id)).status).to.equal('created');
    expect(await balanceOf(user.id)).to.equal(0);
  });

  it('answers 503 while the processor cannot be asked, so the processor delivers again; the retry applies it', async () => {
    const { user, payment, params } = await paidPayment();
    bed.simulator.setFault('down');
    expect((await post(signed(params))).status).to.equal(503);
    expect((await paymentRow(payment.id)).status).to.equal('created');
    bed.simulator.setFault(null);
    expect((await post(signed(params))).status).to.equal(200);
    expect(await balanceOf(user.id)).to.equal(100);
  });

  it('the simulator\'s own signed notifications reach a webhook mounted in the app (end to end)', async () => {
    await onTestbed({}, async (live) => {
      const user = await makeUser();
      const payment = await createPayment(live, user, products.pack_100.id);
      await payAs(payment.payment_url, 'success');
      await waitForStatus(payment.id, 'succeeded');
      await operator(live, payment.id, 'refund');
      await waitForStatus(payment.id, 'refunded');
      await eventually(() => balanceOf(user.id), (balance) => balance === 0, 3000);
    });
  });

  async function startTestbedWithLog() {
    const app = await startTestApp({ log: captured.log, config: { PAYMENT_NOTIFICATION_SECRET: notificationSecret } });
    app.services.paymentProcessor = bed.processor;
    return { app, close: () => app.close() };
  }
});
