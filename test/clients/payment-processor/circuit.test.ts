import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import Koa from 'koa';
import { ProcessorClient } from '../../../clients/payment-processor/client';
import { ProcessorUnavailableError } from '../../../clients/payment-processor/errors';
import { Circuits, isOutage } from '../../../common/circuit';
import { postgresCircuitStores } from '../../../db/circuits/circuit-store';
import { createProcessorSimulator, type ProcessorSimulator } from '../../../simulators/payment-processor/simulator';
import { capturingLogger, services } from '../../harness';
import { rejectionOf } from '../../media/fixtures';

/**
 * The processor client's circuit, kept in Postgres, against the processor simulator over HTTP with
 * its API down: two clients stand for two processes (each its own logger), on one clock the test
 * moves. The requests that reach the simulator are counted at its door.
 */
describe('payment processor: one circuit in Postgres for every process', () => {
  const credentials = { userName: 'circuit-merchant', password: 'circuit-merchant-password', notificationSecret: 'circuit-notification-secret-0123456789' };
  let server: http.Server;
  let base: string;
  let simulator: ProcessorSimulator;
  let statusRequests: number;
  let now: number;

  before(async () => {
    let handle: http.RequestListener = () => {};
    server = http.createServer((request, response) => handle(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // The simulator needs its own address (its pages' base) before it can serve.
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    simulator = createProcessorSimulator({ publicBaseUrl: base, ...credentials, callbackUrl: `${base}/nowhere`, notificationRetryDelaysMs: [] });
    const app = new Koa();
    app.use(async (ctx, next) => {
      if (ctx.path.endsWith('/getOrderStatusExtended.do')) statusRequests += 1;
      await next();
    });
    app.use(simulator.routes);
    handle = app.callback();
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  function processClient(log: ReturnType<typeof capturingLogger>['log']): ProcessorClient {
    const circuits = new Circuits({
      settings: { failures: 3, pause: { baseMs: 1000, capMs: 4000 } },
      log,
      stores: postgresCircuitStores(services().db),
      clock: () => now,
      random: () => 1,
    });
    return new ProcessorClient({ baseUrl: `${base}/sim/processor`, ...credentials, circuit: circuits.of(`payment processor ${base}`, 2000) });
  }

  it('opens once for all, fails fast, probes after backing-off pauses, closes once: one warning each', async () => {
    now = 5_000_000;
    const logs = [capturingLogger(), capturingLogger()];
    const clients = logs.map(({ log }) => processClient(log));
    const order = await clients[0].registerOrder({
      paymentId: '6f1f8a52-2f4c-4bd5-9d0e-4a7f0e0c9b11', amountMinor: 14900, currency: 643, description: '100 credits', locale: 'en',
      method: 'card', returnUrl: `${base}/return`, failUrl: `${base}/fail`, receipt: { itemName: '100 credits', quantity: 1, priceMinor: 14900 },
    });
    statusRequests = 0;
    simulator.setFault('down');

    // Both processes ask every 100 ms, by turns, for 20 s.
    const start = now;
    for (let turn = 0; now < start + 20_000; turn += 1, now += 100) {
      const error = await rejectionOf(clients[turn % 2].getOrder(order.orderId));
      expect(error).to.be.instanceOf(ProcessorUnavailableError);
      expect(isOutage(error)).to.equal(true);
    }
    // Three failures open it; then a probe after 1, 2, 4, 4, 4 and 4 seconds.
    expect(statusRequests).to.equal(3 + 6);
    const warnings = () => logs.flatMap(({ lines }) => lines()).filter((line) => line.level === 40).map((line) => line.msg);
    expect(warnings()).to.deep.equal([`payment processor ${base} unavailable: circuit open, calls fail fast until a probe gets an answer`]);

    simulator.setFault(null);
    const { retry_at: retryAt } = await services().db('circuits').where({ name: `payment processor ${base}` }).first('retry_at');
    now = retryAt.getTime();
    expect((await clients[1].getOrder(order.orderId)).state).to.equal('created');
    expect((await clients[0].getOrder(order.orderId)).state).to.equal('created');
    expect(statusRequests).to.equal(3 + 6 + 2);
    expect(warnings()).to.deep.equal([
      `payment processor ${base} unavailable: circuit open, calls fail fast until a probe gets an answer`,
      `payment processor ${base} answers again: circuit closed`,
    ]);
  });
});
