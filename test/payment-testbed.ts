import type { PaymentRow, ProductRow } from '../db/payments/model';
import type { BindingCharge, OrderRegistration, PaymentProcessor, ProcessorOrder, RegisteredOrder, VerifiedNotification } from '../clients/payment-processor/payment-processor';
import { seedPaymentShowcase } from '../db/payments/seed-showcase';
import { type ProcessorSimulator } from '../simulators/payment-processor/simulator';
import { client } from './client';
import { freePort, resetDatabase, services, startTestApp, type TestApp } from './harness';
import type { TestUser } from './users';
import { eventually } from '../scripts/wait';
import type { Logger } from '../common/logger';

/**
 * The payments test bed: the real API on a loopback port with the processor simulator mounted on it
 * (as the web role does without PAYMENT_PROCESSOR_URL), the webhook and the payer pages, and a
 * processor client with short timeouts that counts its calls. Everything goes over real HTTP.
 */
export const credentials = { userName: 'test-merchant', password: 'test-merchant-password' };
export const notificationSecret = 'payment-notification-secret-for-tests-0123456789';

/** Counts the calls that reach the processor, so tests can tell "asked" from "answered from our data". */
export class CountingProcessor implements PaymentProcessor {
  registers = 0;
  statuses = 0;
  charges = 0;
  constructor(private readonly inner: PaymentProcessor) {}
  resetCounts(): void {
    this.registers = 0;
    this.statuses = 0;
    this.charges = 0;
  }
  registerOrder(order: OrderRegistration): Promise<RegisteredOrder> {
    this.registers += 1;
    return this.inner.registerOrder(order);
  }
  getOrder(orderId: string): Promise<ProcessorOrder> {
    this.statuses += 1;
    return this.inner.getOrder(orderId);
  }
  chargeBinding(charge: BindingCharge): Promise<'charged' | 'declined'> {
    this.charges += 1;
    return this.inner.chargeBinding(charge);
  }
  verifyNotification(params: Record<string, string>): VerifiedNotification | null {
    return this.inner.verifyNotification(params);
  }
}

export interface Testbed {
  app: TestApp;
  api: ReturnType<typeof client>;
  simulator: ProcessorSimulator;
  processor: CountingProcessor;
  /** Moves the simulator's clock (its order sessions) forward. */
  advanceClock(ms: number): void;
  close(): Promise<void>;
}

export async function startTestbed(options: { config?: Record<string, string>; notifications?: boolean; log?: Logger } = {}): Promise<Testbed> {
  let offsetMs = 0;
  const port = await freePort();
  const app = await startTestApp({
    log: options.log,
    config: {
      PORT: String(port),
      PAYMENT_PROCESSOR_LOGIN: credentials.userName,
      PAYMENT_PROCESSOR_PASSWORD: credentials.password,
      PAYMENT_NOTIFICATION_SECRET: notificationSecret,
      PAYMENT_REGISTER_TIMEOUT_MS: '400',
      PAYMENT_STATUS_TIMEOUT_MS: '400',
      ...options.config,
    },
    processorSimulator: {
      // Without notifications the callbacks go to a path nobody serves: only refresh and reconciliation remain.
      ...(options.notifications === false ? { callbackUrl: `http://127.0.0.1:${port}/nowhere` } : {}),
      notificationRetryDelaysMs: [50, 200],
      now: () => new Date(Date.now() + offsetMs),
    },
  });
  const simulator = app.processorSimulator!;
  const processor = new CountingProcessor(app.services.paymentProcessor);
  app.services.paymentProcessor = processor;
  return {
    app,
    api: client(app.url),
    simulator,
    processor,
    advanceClock: (ms) => { offsetMs += ms; },
    close: async () => {
      simulator.setFault(null);
      await app.close();
    },
  };
}

/** A testbed of one test's own (another configuration, notifications off), closed after `run` whatever happens. */
export async function onTestbed(options: Parameters<typeof startTestbed>[0], run: (bed: Testbed) => Promise<void>): Promise<void> {
  const bed = await startTestbed(options);
  try {
    await run(bed);
  } finally {
    await bed.close();
  }
}

/** An empty database with the demo showcase and its offer. */
export async function freshShowcase(): Promise<Record<string, ProductRow>> {
  await resetDatabase();
  await seedPaymentShowcase(services().db);
  const rows: ProductRow[] = await services().db('payment_products').select('*');
  return Object.fromEntries(rows.map((row) => [row.code, row]));
}

export async function paymentRow(id: string): Promise<PaymentRow> {
  return services().db('payments').where({ id }).first('*');
}

export async function balanceOf(userId: string): Promise<number> {
  return (await services().db('users').where({ id: userId }).first('balance')).balance;
}

export async function ledgerOf(userId: string): Promise<{ kind: string; amount: number; reference: string }[]> {
  return services().db('credit_transactions').where({ user_id: userId }).orderBy('seq').select('kind', 'amount', 'reference');
}

/** Spends credits the way a generation would: a `reserve` row. */
export async function spend(userId: string, amount: number): Promise<void> {
  await services().db.raw(
    `with moved as (update users set balance = balance - :amount where id = :id returning balance)
     insert into credit_transactions (user_id, kind, amount, balance_after, reference) select :id, 'reserve', :negative, balance, gen_random_uuid()::text from moved`,
    { id: userId, amount, negative: -amount },
  );
}

/** The payer on the processor's hosted page. */
export function payAs(paymentUrl: string, outcome: 'success' | 'insufficient_funds' | 'system_error' | 'unknown'): Promise<Response> {
  return fetch(paymentUrl, { method: 'POST', body: new URLSearchParams({ outcome }), redirect: 'manual' });
}

/** An operator action in the processor's cabinet (refund, chargeback, expire, sbp-pay, late-capture). */
export async function operator(bed: Testbed, paymentId: string, action: string): Promise<number> {
  const { processor_order_id: orderId } = await paymentRow(paymentId);
  const response = await fetch(`${bed.app.url}/sim/processor/orders/${orderId}/${action}`, { method: 'POST', body: new URLSearchParams(credentials) });
  await response.body?.cancel();
  return response.status;
}

export function waitForStatus(paymentId: string, status: string, timeoutMs = 3000): Promise<PaymentRow> {
  return eventually(() => paymentRow(paymentId), (row) => row.status === status, timeoutMs);
}

/** Creates a payment over HTTP and returns the 201 body. */
export async function createPayment(bed: Testbed, user: TestUser, productId: string, options: { method?: string; key?: string } = {}) {
  const answer = await bed.api.post('/v1/payments', { product_id: productId, method: options.method ?? 'card' }, {
    token: user.token,
    headers: options.key ? { 'Idempotency-Key': options.key } : {},
  });
  if (answer.status !== 201) throw new Error(`expected 201, got ${answer.status}: ${answer.text}`);
  return answer.body;
}
