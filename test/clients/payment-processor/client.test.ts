import { expect } from 'chai';
import nock from 'nock';
import { ProcessorClient } from '../../../clients/payment-processor/client';
import { ProcessorRejectedError, ProcessorUnavailableError } from '../../../clients/payment-processor/errors';
import type { OrderRegistration, ProcessorState } from '../../../clients/payment-processor/payment-processor';
import { languageOf } from '../../../common/language';
import { memoryCircuit } from '../../harness';
import { rejectionOf } from '../../media/fixtures';

const HOST = 'https://processor.test';
const PATH = '/payment/rest';

/** A client with a circuit of its own: the failures one test provokes never open another's. */
function newClient(): ProcessorClient {
  return new ProcessorClient({
    baseUrl: `${HOST}${PATH}/`,
    userName: 'merchant-api',
    password: 'merchant-password',
    notificationSecret: 'notification-secret',
    timeouts: { registerMs: 200, statusMs: 200 },
    circuit: memoryCircuit(),
  });
}

const registration: OrderRegistration = {
  paymentId: '0c1f6f6e-5d0e-4c57-9a59-1f7f7a4e2b10',
  amountMinor: 14900,
  currency: 643,
  description: '100 credits',
  locale: 'en_US',
  method: 'sbp',
  returnUrl: 'https://api.example/v1/payments/0c1f6f6e-5d0e-4c57-9a59-1f7f7a4e2b10/return',
  failUrl: 'https://api.example/v1/payments/0c1f6f6e-5d0e-4c57-9a59-1f7f7a4e2b10/fail',
  receipt: { itemName: 'Pack of 100 credits', quantity: 1, priceMinor: 14900 },
};

function statusReply(answer: Record<string, unknown>): void {
  nock(HOST).post(`${PATH}/getOrderStatusExtended.do`).reply(200, { errorCode: '0', errorMessage: 'Success', orderNumber: registration.paymentId, amount: 14900, currency: '643', ...answer });
}

describe('processor client', () => {
  let client: ProcessorClient;
  before(() => nock.disableNetConnect());
  beforeEach(() => {
    client = newClient();
  });
  afterEach(() => nock.cleanAll());
  after(() => nock.enableNetConnect());

  describe('registerOrder', () => {
    it('posts the order as a form with credentials, receipt and method, and returns the order id and payment page', async () => {
      let form: Record<string, string> = {};
      nock(HOST)
        .post(`${PATH}/register.do`, (body: Record<string, string>) => { form = body; return true; })
        .matchHeader('content-type', 'application/x-www-form-urlencoded')
        .reply(200, { orderId: 'order-1', formUrl: 'https://processor.test/pay/order-1' });

      const order = await client.registerOrder(registration);

      expect(order).to.deep.equal({ orderId: 'order-1', paymentUrl: 'https://processor.test/pay/order-1' });
      expect(form).to.include({
        userName: 'merchant-api',
        password: 'merchant-password',
        orderNumber: registration.paymentId,
        amount: '14900',
        currency: '643',
        returnUrl: registration.returnUrl,
        failUrl: registration.failUrl,
        description: '100 credits',
        language: 'en',
        sessionTimeoutSecs: '1800',
      });
      expect(JSON.parse(form.jsonParams)).to.deep.equal({ method: 'sbp' });
      expect(JSON.parse(form.orderBundle).cartItems.items).to.deep.equal([{
        positionId: '1',
        name: 'Pack of 100 credits',
        quantity: { value: 1, measure: 'шт' },
        itemPrice: 14900,
        itemAmount: 14900,
        tax: { taxType: 0 },
      }]);
    });

    it('registers a subscription\'s order for its client, asking to save the card on the first one only', async () => {
      const forms: Record<string, string>[] = [];
      nock(HOST)
        .post(`${PATH}/register.do`, (body: Record<string, string>) => { forms.push(body); return true; })
        .times(2)
        .reply(200, { orderId: 'order-3', formUrl: 'https://processor.test/pay/order-3' });

      await client.registerOrder({ ...registration, method: 'card', clientId: 'user-1', saveCard: true });
      await client.registerOrder({ ...registration, method: 'card', clientId: 'user-1' });

      expect(forms.map((form) => [form.clientId, JSON.parse(form.jsonParams)])).to.deep.equal([
        ['user-1', { method: 'card', save_card: 'true' }],
        ['user-1', { method: 'card' }],
      ]);
    });

    it('sends a Russian page language for a non-English profile locale', async () => {
      let language = '';
      nock(HOST)
        .post(`${PATH}/register.do`, (body: Record<string, string>) => { language = body.language; return true; })
        .reply(200, { orderId: 'order-2', formUrl: 'https://processor.test/pay/order-2' });

      await client.registerOrder({ ...registration, locale: 'de-DE' });

      expect(language).to.equal('ru');
    });

    it('throws ProcessorRejectedError with the processor error code when registration is refused', async () => {
      nock(HOST).post(`${PATH}/register.do`).reply(200, { errorCode: '1', errorMessage: 'Order with this number was already processed' });

      const error = await rejectionOf(client.registerOrder(registration));

      expect(error).to.be.instanceOf(ProcessorRejectedError);
      expect(error).to.include({ call: 'register', code: '1', processorMessage: 'Order with this number was already processed' });
    });

    for (const status of [500, 502, 503]) {
      it(`throws ProcessorUnavailableError on HTTP ${status}`, async () => {
        nock(HOST).post(`${PATH}/register.do`).reply(status, 'Service Unavailable');

        const error = await rejectionOf(client.registerOrder(registration));

        expect(error).to.be.instanceOf(ProcessorUnavailableError);
        expect(error.message).to.contain(`HTTP ${status}`);
      });
    }

    it('follows no redirect: the form with the merchant\'s password is never posted to another address', async () => {
      nock(HOST).post(`${PATH}/register.do`).reply(307, '', { location: 'https://elsewhere.test/register.do' });
      const elsewhere = nock('https://elsewhere.test').post('/register.do').reply(200, { orderId: 'o', formUrl: 'https://elsewhere.test/pay' });

      const error = await rejectionOf(client.registerOrder(registration));

      expect(error).to.be.instanceOf(ProcessorUnavailableError);
      expect(error.message).to.contain('HTTP 307');
      expect(elsewhere.isDone()).to.equal(false);
    });

    it('throws ProcessorUnavailableError on an answer over 1 MB, without reading it whole', async () => {
      nock(HOST).post(`${PATH}/register.do`).reply(200, 'x'.repeat(1024 * 1024 + 1), { 'content-type': 'application/json' });

      const error = await rejectionOf(client.registerOrder(registration));

      expect(error).to.be.instanceOf(ProcessorUnavailableError);
      expect(error.message).to.contain('larger than');
    });

    it('throws ProcessorUnavailableError when the processor does not answer within the register timeout', async () => {
      nock(HOST).post(`${PATH}/register.do`).delay(2000).reply(200, { orderId: 'late', formUrl: 'https://processor.test/pay/late' });
      const started = Date.now();

      const error = await rejectionOf(client.registerOrder(registration));

      expect(error).to.be.instanceOf(ProcessorUnavailableError);
      expect(error.message).to.contain('no answer within 200 ms');
      expect(Date.now() - started).to.be.below(1500);
    });

    it('throws ProcessorUnavailableError on a network error', async () => {
      nock(HOST).post(`${PATH}/register.do`).replyWithError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' });

      const error = await rejectionOf(client.registerOrder(registration));

      expect(error).to.be.instanceOf(ProcessorUnavailableError);
      expect(error.message).not.to.contain('merchant-password');
    });

    it('throws ProcessorUnavailableError on an answer that is not JSON or lacks the payment page', async () => {
      nock(HOST).post(`${PATH}/register.do`).reply(200, '<html>maintenance</html>');
      expect(await rejectionOf(client.registerOrder(registration))).to.be.instanceOf(ProcessorUnavailableError);

      nock(HOST).post(`${PATH}/register.do`).reply(200, { orderId: 'order-3' });
      expect(await rejectionOf(client.registerOrder(registration))).to.be.instanceOf(ProcessorUnavailableError);
    });
  });

  describe('getOrder', () => {
    it('asks for the order by id with credentials and reads the deposited order', async () => {
      let form: Record<string, string> = {};
      nock(HOST)
        .post(`${PATH}/getOrderStatusExtended.do`, (body: Record<string, string>) => { form = body; return true; })
        .reply(200, {
          errorCode: '0', orderNumber: registration.paymentId, orderStatus: 2, actionCode: 0, actionCodeDescription: '',
          amount: 14900, currency: '643', depositedDate: Date.UTC(2025, 2, 1, 10, 5), receiptUrl: 'https://ofd.example/receipt/1',
        });

      const order = await client.getOrder('order-1');

      expect(form).to.deep.equal({ userName: 'merchant-api', password: 'merchant-password', orderId: 'order-1' });
      expect(order).to.deep.equal({
        orderId: 'order-1',
        paymentId: registration.paymentId,
        state: 'succeeded',
        amountMinor: 14900,
        paidAt: new Date(Date.UTC(2025, 2, 1, 10, 5)),
        receiptUrl: 'https://ofd.example/receipt/1',
        bindingId: null,
      });
    });

    it('reads the saved card of an order from bindingInfo', async () => {
      statusReply({ orderStatus: 2, actionCode: 0, bindingInfo: { clientId: 'user-1', bindingId: 'binding-1' } });
      expect((await client.getOrder('order-1')).bindingId).to.equal('binding-1');
    });

    const cases: { name: string; answer: Record<string, unknown>; state: ProcessorState }[] = [
      { name: 'registered, not paid (0)', answer: { orderStatus: 0, actionCode: -100 }, state: 'created' },
      { name: 'registered, issuer did not answer (0 / 911)', answer: { orderStatus: 0, actionCode: 911 }, state: 'created' },
      { name: 'pre-authorized, not captured (1)', answer: { orderStatus: 1, actionCode: 0 }, state: 'created' },
      { name: '3-D Secure under way (5)', answer: { orderStatus: 5, actionCode: 0 }, state: 'created' },
      { name: 'deposited (2)', answer: { orderStatus: 2, actionCode: 0 }, state: 'succeeded' },
      { name: 'reversed (3)', answer: { orderStatus: 3, actionCode: 0 }, state: 'refunded' },
      { name: 'refunded (4)', answer: { orderStatus: 4, actionCode: 0, refundedAmount: 14900 }, state: 'refunded' },
      { name: 'chargeback on a refunded order (4)', answer: { orderStatus: 4, actionCode: 0, chargeback: true }, state: 'refunded' },
      { name: 'chargeback while still deposited (2)', answer: { orderStatus: 2, actionCode: 0, chargeback: true }, state: 'refunded' },
      { name: 'declined, insufficient funds (6 / 116)', answer: { orderStatus: 6, actionCode: 116 }, state: 'failed' },
      { name: 'declined, system malfunction (6 / 909)', answer: { orderStatus: 6, actionCode: 909 }, state: 'failed' },
      { name: 'declined by session timeout (6 / -2007)', answer: { orderStatus: 6, actionCode: -2007 }, state: 'expired' },
      { name: 'numbers sent as strings ("6" / "-2007")', answer: { orderStatus: '6', actionCode: '-2007' }, state: 'expired' },
    ];
    for (const { name, answer, state } of cases) {
      it(`maps ${name} to ${state}`, async () => {
        statusReply(answer);
        expect((await client.getOrder('order-1')).state).to.equal(state);
      });
    }

    it('gives no paid time and no receipt for an unpaid order', async () => {
      statusReply({ orderStatus: 0, actionCode: -100 });
      expect(await client.getOrder('order-1')).to.include({ paidAt: null, receiptUrl: null });
    });

    it('throws ProcessorUnavailableError for a status the processor should never report', async () => {
      statusReply({ orderStatus: 9, actionCode: 0 });
      const error = await rejectionOf(client.getOrder('order-1'));
      expect(error).to.be.instanceOf(ProcessorUnavailableError);
      expect(error.message).to.contain('unexpected orderStatus 9');
    });

    it('throws ProcessorRejectedError for an order the processor does not know', async () => {
      nock(HOST).post(`${PATH}/getOrderStatusExtended.do`).reply(200, { errorCode: '6', errorMessage: 'Order not found' });
      const error = await rejectionOf(client.getOrder('missing'));
      expect(error).to.be.instanceOf(ProcessorRejectedError);
      expect(error).to.include({ call: 'status', code: '6' });
    });

    it('throws ProcessorUnavailableError on 5xx, timeout and network error', async () => {
      nock(HOST).post(`${PATH}/getOrderStatusExtended.do`).reply(504);
      expect(await rejectionOf(client.getOrder('order-1'))).to.be.instanceOf(ProcessorUnavailableError);

      nock(HOST).post(`${PATH}/getOrderStatusExtended.do`).delay(2000).reply(200, {});
      const started = Date.now();
      expect(await rejectionOf(client.getOrder('order-1'))).to.be.instanceOf(ProcessorUnavailableError);
      expect(Date.now() - started).to.be.below(1500);

      nock(HOST).post(`${PATH}/getOrderStatusExtended.do`).replyWithError('socket hang up');
      expect(await rejectionOf(client.getOrder('order-1'))).to.be.instanceOf(ProcessorUnavailableError);
    });
  });

  describe('chargeBinding', () => {
    it('posts the order and the saved card with credentials: charged on errorCode 0, declined on 2', async () => {
      let form: Record<string, string> = {};
      nock(HOST)
        .post(`${PATH}/paymentOrderBinding.do`, (body: Record<string, string>) => { form = body; return true; })
        .reply(200, { errorCode: '0', errorMessage: 'Success' });
      expect(await client.chargeBinding({ orderId: 'order-1', bindingId: 'binding-1' })).to.equal('charged');
      expect(form).to.deep.equal({ userName: 'merchant-api', password: 'merchant-password', mdOrder: 'order-1', bindingId: 'binding-1' });

      nock(HOST).post(`${PATH}/paymentOrderBinding.do`).reply(200, { errorCode: '2', errorMessage: 'Payment declined' });
      expect(await client.chargeBinding({ orderId: 'order-1', bindingId: 'binding-1' })).to.equal('declined');
    });

    it('throws ProcessorRejectedError for another refusal and ProcessorUnavailableError without an answer', async () => {
      nock(HOST).post(`${PATH}/paymentOrderBinding.do`).reply(200, { errorCode: '7', errorMessage: 'Order cannot be paid' });
      expect(await rejectionOf(client.chargeBinding({ orderId: 'order-1', bindingId: 'binding-1' }))).to.be.instanceOf(ProcessorRejectedError).and.include({ call: 'charge', code: '7' });
      nock(HOST).post(`${PATH}/paymentOrderBinding.do`).reply(502);
      expect(await rejectionOf(client.chargeBinding({ orderId: 'order-1', bindingId: 'binding-1' }))).to.be.instanceOf(ProcessorUnavailableError).and.include({ call: 'charge' });
    });
  });

  describe('page language rule', () => {
    const cases: [string, 'ru' | 'en'][] = [
      ['en', 'en'], ['en-US', 'en'], ['en_GB', 'en'], ['EN', 'en'], [' en ', 'en'],
      ['ru', 'ru'], ['ru-RU', 'ru'], ['uk', 'ru'], ['de', 'ru'], ['', 'ru'],
    ];
    for (const [locale, language] of cases) {
      it(`gives ${language} for profile locale "${locale}"`, () => {
        expect(languageOf(locale)).to.equal(language);
      });
    }
  });
});
