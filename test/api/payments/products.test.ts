import { expect } from 'chai';
import { seedPaymentShowcase } from '../../../db/payments/seed-showcase';
import { services } from '../../harness';
import { freshShowcase, startTestbed, type Testbed } from '../../payment-testbed';
import { makeUser } from '../../users';

describe('payments: products', () => {
  let bed: Testbed;
  before(async () => { bed = await startTestbed(); });
  after(() => bed.close());
  beforeEach(() => freshShowcase());

  it('lists the demo showcase in showcase order with the contract fields; the offer-only pack is never listed', async () => {
    const user = await makeUser();
    const answer = await bed.api.get('/v1/payments/products', { token: user.token });

    expect(answer.status).to.equal(200);
    expect(answer.body.items.map((item: { code: string }) => item.code)).to.deep.equal(['pack_100', 'pack_500', 'pack_1500', 'starter_pack']);
    expect(answer.body).to.include({ total: 4, offset: 0 });
    expect(answer.body.limit).to.be.a('number');
    expect(answer.body.items[1]).to.have.keys(['id', 'code', 'title', 'price_minor', 'credits', 'badge']);
    expect(answer.body.items.map((item: { price_minor: number; credits: number; badge: string | null }) => [item.credits, item.price_minor, item.badge]))
      .to.deep.equal([[100, 14900, null], [500, 59900, 'popular'], [1500, 149000, 'best_value'], [300, 9900, 'once']]);
  });

  it('is open to guests and closed without a token (401)', async () => {
    const guest = await makeUser({ guest: true });
    expect((await bed.api.get('/v1/payments/products', { token: guest.token })).status).to.equal(200);
    const anonymous = await bed.api.get('/v1/payments/products');
    expect(anonymous.status).to.equal(401);
    expect(anonymous.body.error.code).to.equal('auth_required');
  });

  it('gives titles in the profile locale, or in the `locale` asked for', async () => {
    const english = await makeUser({ locale: 'en' });
    const russian = await makeUser({ locale: 'ru' });
    expect((await bed.api.get('/v1/payments/products', { token: english.token })).body.items[0].title).to.equal('100 credits');
    expect((await bed.api.get('/v1/payments/products', { token: russian.token })).body.items[0].title).to.equal('100 кредитов');
    expect((await bed.api.get('/v1/payments/products?locale=en', { token: russian.token })).body.items[0].title).to.equal('100 credits');
  });

  it('follows the operator: a switched-off pack disappears, positions reorder the showcase', async () => {
    const { db } = services();
    await db('payment_products').where({ code: 'pack_500' }).update({ enabled: false });
    await db('payment_products').where({ code: 'starter_pack' }).update({ position: -1 });
    const user = await makeUser();
    const answer = await bed.api.get('/v1/payments/products', { token: user.token });
    expect(answer.body.items.map((item: { code: string }) => item.code)).to.deep.equal(['starter_pack', 'pack_100', 'pack_1500']);
  });

  it('seeds once: a second seed (a restart) changes nothing and keeps the operator\'s edits', async () => {
    const { db } = services();
    await db('payment_products').where({ code: 'pack_100' }).update({ price_minor: 12900 });
    expect(await seedPaymentShowcase(db)).to.equal(false);
    expect(await db('payment_products').count('* as count').first()).to.deep.equal({ count: 5 });
    expect(await db('offers').select('code', 'window_seconds', 'max_issues_per_account')).to.deep.equal([
      { code: 'paywall_discount', window_seconds: 7200, max_issues_per_account: 1 },
    ]);
    expect((await db('payment_products').where({ code: 'pack_100' }).first()).price_minor).to.equal(12900);
  });

  it('seeds concurrently started processes exactly once', async () => {
    const { db } = services();
    await db.raw('truncate offers, payment_products cascade');
    const results = await Promise.all([seedPaymentShowcase(db), seedPaymentShowcase(db), seedPaymentShowcase(db)]);
    expect(results.filter(Boolean)).to.have.length(1);
    expect(await db('payment_products').count('* as count').first()).to.deep.equal({ count: 5 });
  });
});
