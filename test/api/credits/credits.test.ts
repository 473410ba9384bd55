import { expect } from 'chai';
import { credit, debit } from '../../../db/credits/ledger';
import { expectError, guest, registered } from '../../accounts';
import { resetDatabase, services, useTestApp } from '../../harness';

describe('credits: GET /v1/credits/balance and /v1/credits/transactions', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  it('answers the balance with plan_credits 0 and plan_expires_at null', async () => {
    const first = await guest(t.api);
    const answer = await t.api.get('/v1/credits/balance', { token: first.body.access_token });
    expect(answer.status).to.equal(200);
    expect(answer.body).to.deep.equal({ balance: 100, plan_credits: 0, plan_expires_at: null });
  });

  it('lists the history newest first with signed amounts, as one record per operation', async () => {
    const account = await registered(t.api);
    const userId = account.body.user.id;
    await services().db.transaction(async (trx) => {
      await debit(trx, { userId, kind: 'reserve', amount: 10, reference: 'gen-1' });
      await credit(trx, { userId, kind: 'refund', amount: 10, reference: 'gen-1' });
    });
    const answer = await t.api.get('/v1/credits/transactions', { token: account.body.access_token });
    expect(answer.status).to.equal(200);
    expect(answer.body).to.include({ total: 3, limit: 20, offset: 0 });
    expect(answer.body.items.map((item: { kind: string; amount: number; balance_after: number; reference: string }) =>
      [item.kind, item.amount, item.balance_after, item.reference])).to.deep.equal([
      ['refund', 10, 50, 'gen-1'],
      ['reserve', -10, 40, 'gen-1'],
      ['welcome', 50, 50, 'welcome'],
    ]);
    const [item] = answer.body.items;
    expect(item).to.have.all.keys('id', 'kind', 'amount', 'balance_after', 'reference', 'created_at');
    expect(new Date(item.created_at).toISOString()).to.equal(item.created_at);
  });

  it('pages with limit and offset and validates their bounds', async () => {
    const account = await registered(t.api);
    const userId = account.body.user.id;
    await services().db.transaction(async (trx) => {
      for (let index = 0; index < 4; index += 1) await credit(trx, { userId, kind: 'purchase', amount: index + 1, reference: `pay-${index}` });
    });
    const token = account.body.access_token;
    const page = await t.api.get('/v1/credits/transactions?limit=2&offset=1', { token });
    expect(page.body).to.include({ total: 5, limit: 2, offset: 1 });
    expect(page.body.items.map((item: { reference: string }) => item.reference)).to.deep.equal(['pay-2', 'pay-1']);
    expectError(await t.api.get('/v1/credits/transactions?offset=10001', { token }), 422, 'validation_error');
    expectError(await t.api.get('/v1/credits/transactions?limit=101', { token }), 422, 'validation_error');
  });

  it("shows only the caller's own history", async () => {
    const first = await registered(t.api);
    const second = await guest(t.api);
    const answer = await t.api.get('/v1/credits/transactions', { token: second.body.access_token });
    expect(answer.body.items.map((item: { kind: string }) => item.kind)).to.deep.equal(['guest_start']);
    expect(first.body.user.id).not.to.equal(second.body.user.id);
  });

  it('needs a token', async () => {
    expectError(await t.api.get('/v1/credits/balance'), 401, 'auth_required');
    expectError(await t.api.get('/v1/credits/transactions'), 401, 'auth_required');
  });
});
