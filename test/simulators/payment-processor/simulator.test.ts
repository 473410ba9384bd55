import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import { ProcessorClient } from '../../../clients/payment-processor/client';
import { ProcessorRejectedError, ProcessorUnavailableError } from '../../../clients/payment-processor/errors';
import type { PaymentMethod } from '../../../common/payment-method';
import type { OrderRegistration, VerifiedNotification } from '../../../clients/payment-processor/payment-processor';
import { createProcessorSimulator, type ProcessorSimulator } from '../../../simulators/payment-processor/simulator';
import { memoryCircuit } from '../../harness';
import { rejectionOf } from '../../media/fixtures';

const credentials = { userName: 'merchant-api', password: 'merchant-password', notificationSecret: 'notification-secret' };
const START = new Date('2025-03-01T10:00:00Z');
const MINUTE = 60_000;

async function listen(handler: http.RequestListener): Promise<{ server: http.Server; base: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function close(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

describe('processor simulator over HTTP', () => {
  let clock = START;
  let simulator: ProcessorSimulator;
  let simServer: http.Server;
  let receiverServer: http.Server;
  let simBase: string;
  /** The merchant's site, where the simulator is mounted (its PUBLIC_BASE_URL). */
  let siteBase: string;
  let client: ProcessorClient;
  /** Every callback the merchant side received, raw. */
  const callbacks: Record<string, string>[] = [];
  let callbackFailuresToAnswer = 0;

  before(async () => {
    const receiver = new Koa();
    receiver.use(koaBody());
    receiver.use((ctx) => {
      if (callbackFailuresToAnswer > 0) {
        callbackFailuresToAnswer -= 1;
        ctx.status = 500;
        return;
      }
      callbacks.push(ctx.request.body as Record<string, string>);
      ctx.body = 'OK';
    });
    const receiverListening = await listen(receiver.callback());
    receiverServer = receiverListening.server;

    const simListening = await listen(() => {});
    simServer = simListening.server;
    simBase = `${simListening.base}/sim/processor`;
    siteBase = simListening.base;
    simulator = createProcessorSimulator({
      publicBaseUrl: `${simListening.base}/`,
      ...credentials,
      callbackUrl: `${receiverListening.base}/v1/payments/notifications`,
      now: () => clock,
      notificationRetryDelaysMs: [20, 20],
    });
    const app = new Koa();
    app.use(simulator.routes);
    simServer.removeAllListeners('request');
    simServer.on('request', app.callback());
    client = new ProcessorClient({ baseUrl: simBase, ...credentials, timeouts: { registerMs: 300, statusMs: 300 }, circuit: memoryCircuit() });
  });

  beforeEach(() => {
    clock = START;
  });

  afterEach(() => simulator.setFault(null));

  after(async () => {
    await close(simServer);
    await close(receiverServer);
  });

  function registration(method: PaymentMethod = 'card', locale = 'ru'): OrderRegistration {
    const paymentId = randomUUID();
    return {
      paymentId,
      amountMinor: 14900,
      currency: 643,
      description: 'Пакет <100> кредитов',
      locale,
      method,
      returnUrl: `${siteBase}/v1/payments/${paymentId}/return`,
      failUrl: `${siteBase}/v1/payments/${paymentId}/fail`,
      receipt: { itemName: 'Пакет 100 кредитов', quantity: 1, priceMinor: 14900 },
    };
  }

  async function register(method: PaymentMethod = 'card', locale = 'ru') {
    const order = registration(method, locale);
    return { ...order, ...(await client.registerOrder(order)) };
  }

  function payAs(paymentUrl: string, outcome: string): Promise<Response> {
    return fetch(paymentUrl, { method: 'POST', body: new URLSearchParams({ outcome }), redirect: 'manual' });
  }

  function operator(orderId: string, action: string): Promise<Response> {
    return fetch(`${simBase}/orders/${orderId}/${action}`, { method: 'POST', body: new URLSearchParams({ userName: credentials.userName, password: credentials.password }) });
  }

  /** Waits for `count` callbacks about the order and checks each with the adapter. */
  async function notificationsFor(orderId: string, count: number): Promise<(VerifiedNotification | null)[]> {
    const deadline = Date.now() + 2000;
    for (;;) {
      const mine = callbacks.filter((params) => params.mdOrder === orderId);
      if (mine.length >= count) return mine.map((params) => client.verifyNotification(params));
      if (Date.now() > deadline) throw new Error(`expected ${count} notifications for ${orderId}, got ${mine.length}`);
      await sleep(10);
    }
  }

  describe('registration and the hosted page', () => {
    it('registers an order and serves its payment page in Russian for a Russian profile', async () => {
      const order = await register();

      expect(order.paymentUrl).to.equal(`${simBase}/pay/${order.orderId}`);
      const page = await fetch(order.paymentUrl);
      expect(page.status).to.equal(200);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      const html = await page.text();
      expect(html).to.contain('<html lang="ru">').and.contain('Оплата заказа').and.contain('149,00 ₽');
      expect(html).to.contain('Пакет &#60;100&#62; кредитов');
      for (const outcome of ['success', 'insufficient_funds', 'system_error', 'unknown']) {
        expect(html).to.contain(`name="outcome" value="${outcome}"`);
      }
      expect(simulator.orders.get(order.orderId)).to.include({ orderNumber: order.paymentId, amount: 14900, method: 'card', language: 'ru' });
    });

    it('serves the payment page in English for an English profile', async () => {
      const order = await register('card', 'en-US');
      const html = await (await fetch(order.paymentUrl)).text();
      expect(html).to.contain('<html lang="en">').and.contain('Order payment').and.contain('RUB 149.00');
    });

    it('refuses register and status calls with wrong credentials', async () => {
      const intruder = new ProcessorClient({ baseUrl: simBase, ...credentials, password: 'guess', circuit: memoryCircuit() });
      const order = await register();

      for (const call of [intruder.registerOrder(registration()), intruder.getOrder(order.orderId)]) {
        const error = await rejectionOf(call);
        expect(error).to.be.instanceOf(ProcessorRejectedError);
        expect(error).to.include({ code: '5' });
      }
    });

    it('refuses return and fail URLs outside the merchant site (error 5): it is mounted on the service origin, so no open redirect', async () => {
      for (const [returnUrl, failUrl] of [
        ['https://evil.example/phish', undefined],
        [`${siteBase}/v1/payments/x/return`, 'https://evil.example/phish'],
        [`${siteBase.replace('127.0.0.1', 'localhost')}/v1/payments/x/return`, undefined],
        [`${siteBase.replace('http://', 'http://user:pass@')}/v1/payments/x/return`, undefined],
        ['javascript:alert(1)', undefined],
      ]) {
        const error = await rejectionOf(client.registerOrder({ ...registration(), returnUrl: returnUrl!, failUrl: failUrl ?? `${siteBase}/v1/payments/x/fail` }));
        expect(error, returnUrl).to.be.instanceOf(ProcessorRejectedError);
        expect(error).to.include({ code: '5' });
      }
    });

    it('returns the same order for an identical repeat of the order number and refuses a different amount with error 1', async () => {
      const order = registration();
      const first = await client.registerOrder(order);

      expect(await client.registerOrder(order)).to.deep.equal(first);
      const error = await rejectionOf(client.registerOrder({ ...order, amountMinor: 9900, receipt: { ...order.receipt, priceMinor: 9900 } }));
      expect(error).to.be.instanceOf(ProcessorRejectedError);
      expect(error).to.include({ code: '1' });
    });

    it('refuses an order whose fiscal receipt does not add up to the amount (error 5)', async () => {
      const order = registration();
      const error = await rejectionOf(client.registerOrder({ ...order, receipt: { ...order.receipt, priceMinor: 9900 } }));
      expect(error).to.be.instanceOf(ProcessorRejectedError);
      expect(error).to.include({ code: '5' });
    });

    it('answers error 6 for the status of an unknown order and 404 for its page', async () => {
      const error = await rejectionOf(client.getOrder('no-such-order'));
      expect(error).to.be.instanceOf(ProcessorRejectedError);
      expect(error).to.include({ code: '6' });
      expect((await fetch(`${simBase}/pay/no-such-order`)).status).to.equal(404);
    });
  });

  describe('payer outcomes', () => {
    it('success: deposits the order, sends a signed deposited notification and redirects to the return URL', async () => {
      const order = await register();
      clock = new Date(START.getTime() + 2 * MINUTE);

      const answer = await payAs(order.paymentUrl, 'success');

      expect(answer.status).to.equal(303);
      expect(answer.headers.get('location')).to.equal(order.returnUrl);
      const state = await client.getOrder(order.orderId);
      expect(state).to.deep.include({ orderId: order.orderId, paymentId: order.paymentId, state: 'succeeded', amountMinor: 14900, paidAt: clock });
      expect(state.receiptUrl).to.equal(`${simBase}/receipts/${order.orderId}`);
      expect(await notificationsFor(order.orderId, 1)).to.deep.equal([
        { orderId: order.orderId, paymentId: order.paymentId, operation: 'deposited', success: true },
      ]);
    });

    it('success: serves the fiscal receipt page once deposited, and none before', async () => {
      const order = await register();
      const receiptUrl = `${simBase}/receipts/${order.orderId}`;
      expect((await fetch(receiptUrl)).status).to.equal(404);

      await payAs(order.paymentUrl, 'success');

      const receipt = await fetch(receiptUrl);
      expect(receipt.status).to.equal(200);
      expect(await receipt.text()).to.contain('Кассовый чек').and.contain('Пакет 100 кредитов');
    });

    for (const [outcome, actionCode] of [['insufficient_funds', 116], ['system_error', 909]] as const) {
      it(`${outcome}: declines with action code ${actionCode}, sends a declined notification and redirects to the fail URL`, async () => {
        const order = await register();

        const answer = await payAs(order.paymentUrl, outcome);

        expect(answer.status).to.equal(303);
        expect(answer.headers.get('location')).to.equal(order.failUrl);
        expect(await client.getOrder(order.orderId)).to.include({ state: 'failed', paidAt: null, receiptUrl: null });
        expect(simulator.orders.get(order.orderId)).to.include({ status: 6, actionCode });
        expect(await notificationsFor(order.orderId, 1)).to.deep.equal([
          { orderId: order.orderId, paymentId: order.paymentId, operation: 'declined', success: false },
        ]);
      });
    }

    it('unknown: the order stays registered, no notification is sent and the payer sees a pending page', async () => {
      const order = await register();

      const answer = await payAs(order.paymentUrl, 'unknown');

      expect(answer.status).to.equal(200);
      expect(await answer.text()).to.contain('Банк ещё не ответил');
      expect((await client.getOrder(order.orderId)).state).to.equal('created');
      expect(simulator.orders.get(order.orderId)).to.include({ status: 0, actionCode: 911 });
      // The next change is the first thing reported: nothing was sent for the unknown outcome.
      await operator(order.orderId, 'expire');
      expect((await notificationsFor(order.orderId, 1)).map((n) => n?.operation)).to.deep.equal(['declinedByTimeout']);
    });

    it('a declined order can be paid later on the same page', async () => {
      const order = await register();
      await payAs(order.paymentUrl, 'insufficient_funds');
      expect((await client.getOrder(order.orderId)).state).to.equal('failed');

      const html = await (await fetch(order.paymentUrl)).text();
      expect(html).to.contain('Предыдущая попытка отклонена').and.contain('value="success"');
      const answer = await payAs(order.paymentUrl, 'success');

      expect(answer.headers.get('location')).to.equal(order.returnUrl);
      expect((await client.getOrder(order.orderId)).state).to.equal('succeeded');
      expect((await notificationsFor(order.orderId, 2)).map((n) => n?.operation)).to.deep.equal(['declined', 'deposited']);
    });

    it('refuses to take a second payment for a paid order (409)', async () => {
      const order = await register();
      await payAs(order.paymentUrl, 'success');

      const answer = await payAs(order.paymentUrl, 'success');

      expect(answer.status).to.equal(409);
      expect(await answer.text()).to.contain('Заказ уже оплачен');
    });

    it('answers 400 to an outcome it does not know', async () => {
      const order = await register();
      expect((await payAs(order.paymentUrl, 'maybe')).status).to.equal(400);
      expect(simulator.orders.get(order.orderId)?.status).to.equal(0);
    });
  });

  describe('operator actions', () => {
    it('refund: a deposited order becomes refunded with a refunded notification; a second refund is 409', async () => {
      const order = await register();
      await payAs(order.paymentUrl, 'success');

      const answer = await operator(order.orderId, 'refund');

      expect(answer.status).to.equal(200);
      expect(await answer.json()).to.deep.equal({ orderId: order.orderId, orderStatus: 4, actionCode: 0 });
      const state = await client.getOrder(order.orderId);
      expect(state.state).to.equal('refunded');
      expect(state.receiptUrl).to.not.equal(null);
      expect((await notificationsFor(order.orderId, 2))[1]).to.deep.equal(
        { orderId: order.orderId, paymentId: order.paymentId, operation: 'refunded', success: true });
      expect((await operator(order.orderId, 'refund')).status).to.equal(409);
    });

    it('chargeback: a deposited order is flagged, reads as refunded and sends a chargeback notification', async () => {
      const order = await register();
      await payAs(order.paymentUrl, 'success');

      expect((await operator(order.orderId, 'chargeback')).status).to.equal(200);

      expect((await client.getOrder(order.orderId)).state).to.equal('refunded');
      expect(simulator.orders.get(order.orderId)).to.include({ status: 4, chargeback: true, refundedAmount: 14900 });
      expect((await notificationsFor(order.orderId, 2))[1]).to.include({ operation: 'chargeback', success: true });
    });

    it('refund and chargeback of an unpaid order are refused (409)', async () => {
      const order = await register();
      expect((await operator(order.orderId, 'refund')).status).to.equal(409);
      expect((await operator(order.orderId, 'chargeback')).status).to.equal(409);
      expect((await client.getOrder(order.orderId)).state).to.equal('created');
    });

    it('expire: the order is declined by timeout (-2007), reads as expired and can no longer be paid', async () => {
      const order = await register();

      expect((await operator(order.orderId, 'expire')).status).to.equal(200);

      expect((await client.getOrder(order.orderId)).state).to.equal('expired');
      expect(simulator.orders.get(order.orderId)).to.include({ status: 6, actionCode: -2007 });
      expect(await notificationsFor(order.orderId, 1)).to.deep.equal([
        { orderId: order.orderId, paymentId: order.paymentId, operation: 'declinedByTimeout', success: false },
      ]);
      expect(await (await fetch(order.paymentUrl)).text()).to.contain('Время на оплату истекло');
      expect((await payAs(order.paymentUrl, 'success')).status).to.equal(409);
    });

    it('sbp-pay: the bank-transfer emulator pays an SBP order like a success', async () => {
      const order = await register('sbp');
      expect(await (await fetch(order.paymentUrl)).text()).to.contain('СБП');

      expect((await operator(order.orderId, 'sbp-pay')).status).to.equal(200);

      expect((await client.getOrder(order.orderId)).state).to.equal('succeeded');
      expect(simulator.orders.get(order.orderId)).to.include({ status: 2, method: 'sbp' });
      expect((await notificationsFor(order.orderId, 1))[0]).to.include({ operation: 'deposited', success: true });
    });

    it("needs the merchant's credentials: without them (or with wrong ones) 401 and the order is unchanged", async () => {
      const order = await register();
      for (const body of [undefined, new URLSearchParams({ userName: credentials.userName, password: 'guess' })]) {
        for (const action of ['expire', 'sbp-pay', 'refund', 'chargeback', 'late-capture']) {
          const answer = await fetch(`${simBase}/orders/${order.orderId}/${action}`, { method: 'POST', body });
          expect(answer.status, action).to.equal(401);
          await answer.body?.cancel();
        }
      }
      expect(simulator.orders.get(order.orderId)).to.include({ status: 0 });
    });

    it('answers 404 for an operator action on an unknown order', async () => {
      expect((await operator('no-such-order', 'refund')).status).to.equal(404);
    });
  });

  describe('session timeout', () => {
    it('expires an unpaid order by itself 30 minutes after registration, seen on the next read', async () => {
      const order = await register();

      clock = new Date(START.getTime() + 30 * MINUTE - 1000);
      expect((await client.getOrder(order.orderId)).state).to.equal('created');

      clock = new Date(START.getTime() + 30 * MINUTE);
      expect((await client.getOrder(order.orderId)).state).to.equal('expired');
      expect((await notificationsFor(order.orderId, 1))[0]).to.include({ operation: 'declinedByTimeout', success: false });
      expect((await payAs(order.paymentUrl, 'success')).status).to.equal(409);
    });

    it('does not let a declined order be retried after its session ended', async () => {
      const order = await register();
      await payAs(order.paymentUrl, 'system_error');

      clock = new Date(START.getTime() + 31 * MINUTE);

      expect((await payAs(order.paymentUrl, 'success')).status).to.equal(409);
      expect((await client.getOrder(order.orderId)).state).to.equal('failed');
    });
  });

  describe('notification delivery', () => {
    it('retries a callback the merchant refused, without delaying the payer', async () => {
      const order = await register();
      callbackFailuresToAnswer = 2;

      const answer = await payAs(order.paymentUrl, 'success');

      expect(answer.status).to.equal(303);
      expect(await notificationsFor(order.orderId, 1)).to.deep.equal([
        { orderId: order.orderId, paymentId: order.paymentId, operation: 'deposited', success: true },
      ]);
      expect(callbackFailuresToAnswer).to.equal(0);
    });
  });

  describe('saved cards (subscriptions)', () => {
    /** A first period: registered for the client with a request to save the card, then paid on the page. */
    async function savedCard(clientId: string, outcome = 'success') {
      const order = registration();
      const registered = await client.registerOrder({ ...order, clientId, saveCard: true });
      await payAs(registered.paymentUrl, outcome);
      return registered.orderId;
    }

    async function renewalOrder(clientId: string) {
      const order = registration();
      return { ...order, ...(await client.registerOrder({ ...order, clientId })) };
    }

    it('a paid order registered with save_card reports its binding; one without save_card, or unpaid, reports none', async () => {
      const clientId = randomUUID();
      const saving = await savedCard(clientId);
      const state = await client.getOrder(saving);
      expect(state.bindingId).to.be.a('string');
      expect(simulator.orders.get(saving)).to.include({ clientId, saveCard: true, bindingId: state.bindingId });

      const plain = await register();
      await payAs(plain.paymentUrl, 'success');
      expect((await client.getOrder(plain.orderId)).bindingId).to.equal(null);
      const declined = await savedCard(randomUUID(), 'insufficient_funds');
      expect((await client.getOrder(declined)).bindingId).to.equal(null);
    });

    it('charges the saved card for a new order of the same client at once: deposited, with a notification, no payer', async () => {
      const clientId = randomUUID();
      const bindingId = (await client.getOrder(await savedCard(clientId))).bindingId!;
      const renewal = await renewalOrder(clientId);

      expect(await client.chargeBinding({ orderId: renewal.orderId, bindingId })).to.equal('charged');
      expect(await client.getOrder(renewal.orderId)).to.deep.include({ state: 'succeeded', paymentId: renewal.paymentId, amountMinor: 14900, bindingId });
      const [notification] = await notificationsFor(renewal.orderId, 1);
      expect(notification).to.include({ operation: 'deposited', success: true });
    });

    it('decline-next on the order that saved the card declines the next charges, one per call, then charges again', async () => {
      const clientId = randomUUID();
      const saving = await savedCard(clientId);
      const bindingId = (await client.getOrder(saving)).bindingId!;
      expect((await operator(saving, 'decline-next')).status).to.equal(200);
      expect((await operator(saving, 'decline-next')).status).to.equal(200);

      const outcomes = [];
      for (let charge = 0; charge < 3; charge += 1) {
        const renewal = await renewalOrder(clientId);
        outcomes.push([await client.chargeBinding({ orderId: renewal.orderId, bindingId }), (await client.getOrder(renewal.orderId)).state]);
      }
      expect(outcomes).to.deep.equal([['declined', 'failed'], ['declined', 'failed'], ['charged', 'succeeded']]);
    });

    it('decline-next is refused (409) for an order that saved no card', async () => {
      const plain = await register();
      await payAs(plain.paymentUrl, 'success');
      expect((await operator(plain.orderId, 'decline-next')).status).to.equal(409);
    });

    it('refuses to charge an order twice, another client\'s order, or with an unknown card (ProcessorRejectedError)', async () => {
      const clientId = randomUUID();
      const bindingId = (await client.getOrder(await savedCard(clientId))).bindingId!;
      const renewal = await renewalOrder(clientId);
      await client.chargeBinding({ orderId: renewal.orderId, bindingId });

      const twice = await rejectionOf(client.chargeBinding({ orderId: renewal.orderId, bindingId }));
      expect(twice).to.be.instanceOf(ProcessorRejectedError);
      expect(twice).to.include({ code: '7' });
      const stranger = await renewalOrder(randomUUID());
      expect(await rejectionOf(client.chargeBinding({ orderId: stranger.orderId, bindingId }))).to.include({ code: '7' });
      expect(await rejectionOf(client.chargeBinding({ orderId: stranger.orderId, bindingId: randomUUID() }))).to.include({ code: '8' });
      expect(await rejectionOf(client.chargeBinding({ orderId: 'no-such-order', bindingId }))).to.include({ code: '6' });
      expect((await client.getOrder(stranger.orderId)).state).to.equal('created');
    });

    it('a charge with the API down is ProcessorUnavailableError and charges nothing', async () => {
      const clientId = randomUUID();
      const bindingId = (await client.getOrder(await savedCard(clientId))).bindingId!;
      const renewal = await renewalOrder(clientId);
      simulator.setFault('down');
      expect(await rejectionOf(client.chargeBinding({ orderId: renewal.orderId, bindingId }))).to.be.instanceOf(ProcessorUnavailableError);
      simulator.setFault(null);
      expect((await client.getOrder(renewal.orderId)).state).to.equal('created');
    });
  });

  describe('faults', () => {
    it('down: register and status answer 503 at once, giving ProcessorUnavailableError; clearing the fault restores them', async () => {
      const order = await register();
      simulator.setFault('down');

      const errors = [await rejectionOf(client.registerOrder(registration())), await rejectionOf(client.getOrder(order.orderId))];

      for (const error of errors) {
        expect(error).to.be.instanceOf(ProcessorUnavailableError);
        // An answer, not a timeout of the client.
        expect(error.message).to.contain('HTTP 503');
      }
      simulator.setFault(null);
      expect((await client.getOrder(order.orderId)).state).to.equal('created');
    });

    it('hang: register and status never answer, so the client gives up with ProcessorUnavailableError within its timeout', async () => {
      const order = await register();
      simulator.setFault('hang');

      const started = Date.now();
      const errors = await Promise.all([rejectionOf(client.registerOrder(registration())), rejectionOf(client.getOrder(order.orderId))]);

      for (const error of errors) {
        expect(error).to.be.instanceOf(ProcessorUnavailableError);
        expect(error.message).to.contain('no answer within 300 ms');
      }
      expect(Date.now() - started).to.be.within(250, 2000);
      simulator.setFault(null);
      expect((await client.getOrder(order.orderId)).state).to.equal('created');
    });

    it('keeps the payment page working while the API is down', async () => {
      const order = await register();
      simulator.setFault('down');
      expect((await fetch(order.paymentUrl)).status).to.equal(200);
    });
  });

  it('works mounted behind a body parser that already read the form, as in the service app', async () => {
    const app = new Koa();
    app.use(koaBody({ urlencoded: true, json: true }));
    app.use(simulator.routes);
    const { server, base } = await listen(app.callback());
    try {
      const viaParser = new ProcessorClient({ baseUrl: `${base}/sim/processor`, ...credentials, circuit: memoryCircuit() });
      const order = await viaParser.registerOrder(registration());
      const paid = await payAs(`${base}/sim/processor/pay/${order.orderId}`, 'success');
      expect(paid.status).to.equal(303);
      expect((await viaParser.getOrder(order.orderId)).state).to.equal('succeeded');
    } finally {
      await close(server);
    }
  });
});
