import { expect } from 'chai';
import { paymentMounts } from '../../../api/payments/mounts';
import { startWeb } from '../../../api/web';
import { ConfigError, loadConfig } from '../../../config';
import { processorBaseUrl } from '../../../clients/payment-processor/create-payment-processor';
import { paymentProcessorOf } from '../../../services/payments/payment-processor';
import { client } from '../../client';
import { freePort, services, testConfig } from '../../harness';
import { freshShowcase, payAs, waitForStatus } from '../../payment-testbed';
import { makeUser } from '../../users';

describe('payments: configuration and the web role\'s wiring', () => {
  const base = { TOKEN_SECRET: 'x'.repeat(40), DATA_DIR: '/tmp/payments-config-test' };

  it('defaults: payments on, the simulator on our own web app, timeouts within the contract\'s ~10 s', () => {
    const config = loadConfig(base);
    expect(config.payments).to.include({
      enabled: true, processorUrl: null, registerTimeoutMs: 8000, statusTimeoutMs: 5000, refreshMinIntervalS: 5,
      reconcileFirstCheckS: 60, reconcileIntervalS: 120, chargebackWatchDays: 45,
    });
    expect(processorBaseUrl(config)).to.equal('http://127.0.0.1:8080/sim/processor');
    // Generated once and kept, like TOKEN_SECRET.
    expect(config.payments.notificationSecret).to.have.length.greaterThan(30);
    expect(loadConfig(base).payments.notificationSecret).to.equal(config.payments.notificationSecret);
  });

  it('a real processor needs its login and password; payments can be switched off', () => {
    expect(() => loadConfig({ ...base, PAYMENT_PROCESSOR_URL: 'https://pay.example/rest' })).to.throw(ConfigError, 'PAYMENT_PROCESSOR_LOGIN');
    const config = loadConfig({ ...base, PAYMENT_PROCESSOR_URL: 'https://pay.example/rest/', PAYMENT_PROCESSOR_LOGIN: 'l', PAYMENT_PROCESSOR_PASSWORD: 'p', PAYMENTS_ENABLED: '0' });
    expect(processorBaseUrl(config)).to.equal('https://pay.example/rest');
    expect(config.payments.enabled).to.equal(false);
    expect(() => loadConfig({ ...base, PAYMENT_NOTIFICATION_SECRET: 'short' })).to.throw(ConfigError, 'PAYMENT_NOTIFICATION_SECRET');
  });

  it('mounts the simulator only when no processor is configured', async () => {
    const withSimulator = (await paymentMounts({ ...services(), config: testConfig() })).mounts;
    const withProcessor = (await paymentMounts({ ...services(), config: testConfig({ PAYMENT_PROCESSOR_URL: 'https://pay.example', PAYMENT_PROCESSOR_LOGIN: 'l', PAYMENT_PROCESSOR_PASSWORD: 'p' }) })).mounts;
    expect(withSimulator).to.have.length(withProcessor.length + 1);
  });

  it('end to end on the web role with embedded defaults: pay on the simulator\'s page, the signed notification credits the pack', async () => {
    const products = await freshShowcase();
    const port = await freePort();
    // No processor configured: the client points at the simulator mounted beside the API.
    const config = testConfig({ PORT: String(port) });
    const web = await startWeb({ ...services(), config, paymentProcessor: paymentProcessorOf(config, services().db, services().log) });
    try {
      const api = client(web.url);
      const user = await makeUser();
      const created = await api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token });
      expect(created.status).to.equal(201);
      expect(created.body.payment_url).to.match(new RegExp(`^http://127\\.0\\.0\\.1:${port}/sim/processor/pay/`));

      const redirect = await payAs(created.body.payment_url, 'success');
      expect(redirect.headers.get('location')).to.equal(`http://127.0.0.1:${port}/v1/payments/${created.body.id}/return`);

      await waitForStatus(created.body.id, 'succeeded');
      expect((await api.get('/v1/credits/balance', { token: user.token })).body.balance).to.equal(100);
    } finally {
      await web.stop();
    }
  });
});
