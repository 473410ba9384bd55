import { expect } from 'chai';
import { freshShowcase, startTestbed } from '../payment-testbed';
import { makeUser } from '../users';

describe('stopping the web role', () => {
  it('does not wait out the keep-alive timeout for a request that was still running when it began', async function () {
    this.timeout(30_000);
    const products = await freshShowcase();
    const bed = await startTestbed();
    const user = await makeUser();
    // A keep-alive connection, then a request on it that waits for the silent processor (400 ms).
    await bed.api.get('/v1/payments/products', { token: user.token });
    bed.simulator.setFault('hang');
    const inFlight = bed.api.post('/v1/payments', { product_id: products.pack_100.id, method: 'card' }, { token: user.token });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    const stopped = bed.close();
    expect([201, 503]).to.include((await inFlight).status);
    await stopped;
    expect(Date.now() - started).to.be.below(5000);
  });
});
