import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { ProductRow } from '../../../db/payments/model';
import { createPayment, freshShowcase, operator, payAs, paymentRow, startTestbed, waitForStatus, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';

/** An open SSE response read frame by frame. */
class EventReader {
  private buffer = '';
  private readonly decoder = new TextDecoder();
  ended = false;
  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>, private readonly abort: AbortController) {}

  /** The next frame (comments skipped), or null when the server ended the stream. */
  async next(timeoutMs = 3000): Promise<string | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.buffer.indexOf('\n\n');
      if (end >= 0) {
        const frame = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        if (frame.startsWith(':')) continue;
        return frame;
      }
      if (this.ended) return null;
      const chunk = await Promise.race([
        this.reader.read(),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no event in time')), Math.max(1, deadline - Date.now()))),
      ]);
      if (chunk.done) this.ended = true;
      else this.buffer += this.decoder.decode(chunk.value, { stream: true });
    }
  }

  close(): void {
    this.abort.abort();
  }
}

describe('payments: GET /v1/payments/{id}/stream', () => {
  let bed: Testbed;
  let products: Record<string, ProductRow>;
  const open: EventReader[] = [];
  before(async () => { bed = await startTestbed(); });
  after(() => bed.close());
  beforeEach(async () => { products = await freshShowcase(); });
  afterEach(() => { for (const reader of open.splice(0)) reader.close(); });

  async function stream(token: string, id: string): Promise<{ status: number; contentType: string | null; events: EventReader; body?: unknown }> {
    const abort = new AbortController();
    const response = await fetch(`${bed.app.url}/v1/payments/${id}/stream`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
    if (response.status !== 200) return { status: response.status, contentType: response.headers.get('content-type'), events: null as never, body: await response.json() };
    const events = new EventReader(response.body!.getReader(), abort);
    open.push(events);
    return { status: 200, contentType: response.headers.get('content-type'), events };
  }

  it('sends a snapshot first, one bare data line per state, stays open at failed, closes at succeeded', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    const { status, contentType, events } = await stream(user.token, payment.id);
    expect(status).to.equal(200);
    expect(contentType).to.match(/^text\/event-stream/);
    expect(await events.next()).to.equal(`data: ${JSON.stringify({ id: payment.id, status: 'created', paid_at: null })}`);

    await payAs(payment.payment_url, 'insufficient_funds');
    expect(await events.next()).to.equal(`data: ${JSON.stringify({ id: payment.id, status: 'failed', paid_at: null })}`);

    await payAs(payment.payment_url, 'success');
    const paid = await events.next();
    const row = await paymentRow(payment.id);
    expect(paid).to.equal(`data: ${JSON.stringify({ id: payment.id, status: 'succeeded', paid_at: row.paid_at!.toISOString() })}`);
    expect(await events.next()).to.equal(null);
  });

  it('stays open at expired (the payer may still pay late) and closes at refunded', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    const { events } = await stream(user.token, payment.id);
    expect(await events.next()).to.contain('"status":"created"');
    await operator(bed, payment.id, 'expire');
    expect(await events.next()).to.contain('"status":"expired"');
    await operator(bed, payment.id, 'late-capture');
    expect(await events.next()).to.contain('"status":"succeeded"');
    expect(await events.next()).to.equal(null);

    // A terminal payment: the snapshot, then the end.
    await operator(bed, payment.id, 'refund');
    await waitForStatus(payment.id, 'refunded');
    const again = await stream(user.token, payment.id);
    expect(await again.events.next()).to.contain('"status":"refunded"');
    expect(await again.events.next()).to.equal(null);
  });

  it('404 for an absent or another user\'s payment, or an id that is no UUID; 401 without a token', async () => {
    const owner = await makeUser();
    const payment = await createPayment(bed, owner, products.pack_100.id);
    const stranger = await makeUser();
    for (const [token, id] of [[stranger.token, payment.id], [owner.token, randomUUID()], [owner.token, 'nope']]) {
      const answer = await stream(token, id);
      expect(answer.status).to.equal(404);
      expect(answer.body).to.deep.include({ error: { code: 'not_found', message: 'Not found.' } });
    }
    expect((await fetch(`${bed.app.url}/v1/payments/${payment.id}/stream`)).status).to.equal(401);
  });
});
