import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { Knex } from 'knex';
import type { ProductRow } from '../../../db/payments/model';
import { services } from '../../harness';
import { createPayment, freshShowcase, operator, payAs, startTestbed, waitForStatus, type Testbed } from '../../payment-testbed';
import { makeUser, type TestUser } from '../../users';

describe('special offers', () => {
  let bed: Testbed;
  let products: Record<string, ProductRow>;
  let db: Knex;
  before(async () => {
    bed = await startTestbed();
    db = services().db;
  });
  after(() => bed.close());
  beforeEach(async () => {
    products = await freshShowcase();
    bed.processor.resetCounts();
  });

  const paywallDismissed = (user: TestUser) => bed.api.post('/v1/offers/paywall-dismissed', undefined, { token: user.token });
  const current = (user: TestUser) => bed.api.get('/v1/offers/current', { token: user.token });
  const dismiss = (user: TestUser, id: string) => bed.api.post(`/v1/offers/${id}/dismiss`, undefined, { token: user.token });
  const buy = (user: TestUser, productId = products.offer_pack_400.id) =>
    bed.api.post('/v1/payments', { product_id: productId, method: 'card' }, { token: user.token });
  /** Moves the caller's issues back in time, as if `seconds` had passed. */
  const age = (user: TestUser, seconds: number) => db('offer_issues').where({ user_id: user.id }).update({
    issued_at: db.raw('issued_at - make_interval(secs => ?)', [seconds]),
    expires_at: db.raw('expires_at - make_interval(secs => ?)', [seconds]),
  });

  it('paywall-dismissed issues paywall_discount: the offer-only pack, a two-hour window, not dismissed', async () => {
    const user = await makeUser({ locale: 'en' });
    const answer = await paywallDismissed(user);
    expect(answer.status).to.equal(200);
    expect(answer.body).to.have.keys(['id', 'code', 'expires_in', 'is_dismissed', 'product']);
    expect(answer.body).to.include({ code: 'paywall_discount', is_dismissed: false });
    expect(answer.body.expires_in).to.be.within(7195, 7200);
    expect(answer.body.product).to.deep.equal({
      id: products.offer_pack_400.id, code: 'offer_pack_400', title: 'Special offer: 400 credits', price_minor: 19900, credits: 400, badge: null, kind: 'pack',
    });
    expect((await current(user)).body).to.deep.equal(answer.body);
  });

  it('a repeat while the window lives returns the same offer with a smaller expires_in: a restart never extends it', async () => {
    const user = await makeUser();
    const first = await paywallDismissed(user);
    await age(user, 600);
    const again = await paywallDismissed(user);
    expect(again.body.id).to.equal(first.body.id);
    expect(again.body.expires_in).to.be.within(6595, 6600);
    expect(await db('offer_issues').where({ user_id: user.id })).to.have.length(1);
  });

  it('current has no side effects: null before any issue', async () => {
    const user = await makeUser();
    const answer = await current(user);
    expect(answer.status).to.equal(200);
    expect(answer.headers.get('content-type')).to.match(/application\/json/);
    expect(answer.text).to.equal('null');
    expect(await db('offer_issues').where({ user_id: user.id })).to.have.length(0);
  });

  it('once the window is over: current is null, paywall-dismissed is null (one issue per account), paying is 403', async () => {
    const user = await makeUser();
    await paywallDismissed(user);
    await age(user, 7200);
    expect((await current(user)).text).to.equal('null');
    const again = await paywallDismissed(user);
    expect([again.status, again.text]).to.deep.equal([200, 'null']);
    const payment = await buy(user);
    expect([payment.status, payment.body.error.code]).to.deep.equal([403, 'forbidden']);
    expect(bed.processor.registers).to.equal(0);
  });

  it('gives N windows to an account when the operator allows N issues, each counted from its own issue', async () => {
    await db('offers').where({ code: 'paywall_discount' }).update({ max_issues_per_account: 2 });
    const user = await makeUser();
    const first = await paywallDismissed(user);
    await age(user, 7200);
    const second = await paywallDismissed(user);
    expect(second.body.id).not.to.equal(first.body.id);
    expect(second.body.expires_in).to.be.within(7195, 7200);
    await age(user, 7200);
    expect((await paywallDismissed(user)).text).to.equal('null');
  });

  it('is never issued to an account with a paid purchase', async () => {
    const user = await makeUser();
    const payment = await createPayment(bed, user, products.pack_100.id);
    await payAs(payment.payment_url, 'success');
    await waitForStatus(payment.id, 'succeeded');
    expect((await paywallDismissed(user)).text).to.equal('null');
    expect(await db('offer_issues').where({ user_id: user.id })).to.have.length(0);
  });

  it('null when nothing is configured or the operator switched the offer off', async () => {
    await db('offers').update({ enabled: false });
    const user = await makeUser();
    expect((await paywallDismissed(user)).text).to.equal('null');
    await db('offers').update({ enabled: true });
    const issued = await paywallDismissed(user);
    expect(issued.body.code).to.equal('paywall_discount');
    await db('offers').update({ enabled: false });
    expect((await current(user)).text).to.equal('null');
    expect((await buy(user)).status).to.equal(403);
  });

  it('concurrent paywall-dismissed taps open one window', async () => {
    const user = await makeUser();
    const answers = await Promise.all(Array.from({ length: 5 }, () => paywallDismissed(user)));
    expect(new Set(answers.map((answer) => answer.body.id)).size).to.equal(1);
    expect(await db('offer_issues').where({ user_id: user.id })).to.have.length(1);
  });

  it('dismiss: 204, also on repeat; the offer stays in current with is_dismissed true and stays payable', async () => {
    const user = await makeUser();
    const offer = (await paywallDismissed(user)).body;
    expect((await dismiss(user, offer.id)).status).to.equal(204);
    expect((await dismiss(user, offer.id)).status).to.equal(204);
    const shown = await current(user);
    expect(shown.body).to.include({ id: offer.id, is_dismissed: true });
    expect((await paywallDismissed(user)).body).to.include({ id: offer.id, is_dismissed: true });
    const payment = await buy(user);
    expect(payment.status).to.equal(201);
    expect(payment.body).to.include({ product_id: products.offer_pack_400.id, amount_minor: 19900, credits: 400 });
  });

  it('dismiss: 404 for another user\'s issue, an absent one, or an id that is no UUID', async () => {
    const owner = await makeUser();
    const offer = (await paywallDismissed(owner)).body;
    const stranger = await makeUser();
    for (const [user, id] of [[stranger, offer.id], [owner, randomUUID()], [owner, 'nope']] as const) {
      const answer = await dismiss(user, id);
      expect([answer.status, answer.body.error.code]).to.deep.equal([404, 'not_found']);
    }
    expect((await current(owner)).body.is_dismissed).to.equal(false);
  });

  it('the offer is paid with product.id through POST /v1/payments; once paid it is over and a second purchase is 403', async () => {
    const user = await makeUser();
    const offer = (await paywallDismissed(user)).body;
    const payment = await createPayment(bed, user, offer.product.id);
    await payAs(payment.payment_url, 'success');
    await waitForStatus(payment.id, 'succeeded');
    expect((await db('payments').where({ id: payment.id }).first()).offer_issue_id).to.equal(offer.id);

    expect((await current(user)).text).to.equal('null');
    expect((await paywallDismissed(user)).text).to.equal('null');
    const again = await buy(user);
    expect([again.status, again.body.error.code]).to.deep.equal([403, 'forbidden']);
    // Also after a refund: it was paid.
    await operator(bed, payment.id, 'refund');
    await waitForStatus(payment.id, 'refunded');
    expect((await buy(user)).status).to.equal(403);
  });

  it('403 for an offer-only pack never issued to the caller, before anything reaches the processor', async () => {
    const user = await makeUser();
    const other = await makeUser();
    await paywallDismissed(other);
    const answer = await buy(user);
    expect([answer.status, answer.body.error.code]).to.deep.equal([403, 'forbidden']);
    expect(bed.processor.registers).to.equal(0);
  });

  it('an offer checkout declined by the bank can be retried while the window lives', async () => {
    const user = await makeUser();
    const offer = (await paywallDismissed(user)).body;
    const declined = await createPayment(bed, user, offer.product.id);
    await payAs(declined.payment_url, 'insufficient_funds');
    await waitForStatus(declined.id, 'failed');
    expect((await current(user)).body.id).to.equal(offer.id);
    expect((await buy(user)).status).to.equal(201);
  });

  it('is closed to guests (403 registration_required) and needs a token (401)', async () => {
    const guest = await makeUser({ guest: true });
    for (const answer of [await paywallDismissed(guest), await current(guest), await dismiss(guest, randomUUID())]) {
      expect([answer.status, answer.body.error.code]).to.deep.equal([403, 'registration_required']);
    }
    expect((await bed.api.get('/v1/offers/current')).status).to.equal(401);
  });
});
