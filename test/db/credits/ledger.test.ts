import { expect } from 'chai';
import { credit, debit, debitUpTo } from '../../../db/credits/ledger';
import { resetDatabase, services } from '../../harness';
import { makeUser } from '../../users';

async function state(userId: string): Promise<{ balance: number; sum: number; rows: number }> {
  const { db } = services();
  const user = await db('users').where({ id: userId }).first('balance');
  const [totals] = await db('credit_transactions').where({ user_id: userId }).select(db.raw('coalesce(sum(amount), 0)::integer as sum, count(*)::integer as rows'));
  return { balance: user.balance, sum: totals.sum, rows: totals.rows };
}

describe('credit ledger', () => {
  beforeEach(() => resetDatabase());

  it('credits: moves the balance and appends one row with balance_after', async () => {
    const { id: userId } = await makeUser();
    const entry = await services().db.transaction((trx) => credit(trx, { userId, kind: 'welcome', amount: 50, reference: 'welcome' }));
    expect(entry).to.include({ userId, kind: 'welcome', amount: 50, balanceAfter: 50, reference: 'welcome' });
    expect(entry!.createdAt).to.be.instanceOf(Date);
    expect(await state(userId)).to.deep.equal({ balance: 50, sum: 50, rows: 1 });
  });

  it('credits the same (user, kind, reference) once: the repeat answers null and writes nothing', async () => {
    const { id: userId } = await makeUser();
    const { db } = services();
    await db.transaction((trx) => credit(trx, { userId, kind: 'refund', amount: 10, reference: 'gen-1' }));
    const again = await db.transaction((trx) => credit(trx, { userId, kind: 'refund', amount: 10, reference: 'gen-1' }));
    expect(again).to.equal(null);
    expect(await state(userId)).to.deep.equal({ balance: 10, sum: 10, rows: 1 });
  });

  it('allows the same reference under another kind (a reserve and its refund)', async () => {
    const { id: userId } = await makeUser({ balance: 30 });
    const { db } = services();
    const reserved = await db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 20, reference: 'gen-1' }));
    const refunded = await db.transaction((trx) => credit(trx, { userId, kind: 'refund', amount: 20, reference: 'gen-1' }));
    expect(reserved).to.include({ amount: -20, balanceAfter: 10 });
    expect(refunded).to.include({ amount: 20, balanceAfter: 30 });
  });

  it("debits: answers 'insufficient' and writes nothing when the balance is lower", async () => {
    const { id: userId } = await makeUser({ balance: 5 });
    const result = await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 6, reference: 'gen-1' }));
    expect(result).to.equal('insufficient');
    expect(await state(userId)).to.deep.equal({ balance: 5, sum: 5, rows: 1 });
  });

  it('debits the exact balance down to zero', async () => {
    const { id: userId } = await makeUser({ balance: 5 });
    const result = await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 5, reference: 'gen-1' }));
    expect(result).to.include({ amount: -5, balanceAfter: 0 });
  });

  it('debitUpTo takes only what is left, never going negative, and records a repeat once', async () => {
    const { id: userId } = await makeUser({ balance: 30 });
    const { db } = services();
    const revoked = await db.transaction((trx) => debitUpTo(trx, { userId, kind: 'purchase_revoke', amount: 100, reference: 'pay-1' }));
    expect(revoked).to.include({ amount: -30, balanceAfter: 0 });
    expect(await db.transaction((trx) => debitUpTo(trx, { userId, kind: 'purchase_revoke', amount: 100, reference: 'pay-1' }))).to.equal(null);
    const nothingLeft = await db.transaction((trx) => debitUpTo(trx, { userId, kind: 'purchase_revoke', amount: 40, reference: 'pay-2' }));
    expect(nothingLeft).to.include({ amount: 0, balanceAfter: 0 });
    expect(await state(userId)).to.deep.equal({ balance: 0, sum: 0, rows: 3 });
  });

  it('rolls back with the caller: a failed transaction leaves neither balance nor row', async () => {
    const { id: userId } = await makeUser();
    await services().db.transaction(async (trx) => {
      await credit(trx, { userId, kind: 'purchase', amount: 100, reference: 'pay-1' });
      throw new Error('caller failed');
    }).catch(() => undefined);
    expect(await state(userId)).to.deep.equal({ balance: 0, sum: 0, rows: 0 });
  });

  it('rejects a zero, negative or fractional amount', async () => {
    const { id: userId } = await makeUser({ balance: 10 });
    for (const amount of [0, -5, 1.5]) {
      let failed = false;
      await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount, reference: `x${amount}` })).catch(() => { failed = true; });
      expect(failed, `amount ${amount}`).to.equal(true);
    }
  });

  it('fails for a user that does not exist', async () => {
    let failed = false;
    await services().db.transaction((trx) => credit(trx, { userId: '00000000-0000-4000-8000-000000000000', kind: 'welcome', amount: 1, reference: 'x' }))
      .catch(() => { failed = true; });
    expect(failed).to.equal(true);
  });

  it('serializes concurrent debits: twenty reserves of 10 on a balance of 100 leave exactly ten winners', async () => {
    const { id: userId } = await makeUser({ balance: 100 });
    const { db } = services();
    const results = await Promise.all(Array.from({ length: 20 }, (_, index) =>
      db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 10, reference: `gen-${index}` }))));
    expect(results.filter((result) => result === 'insufficient')).to.have.length(10);
    expect(await state(userId)).to.deep.equal({ balance: 0, sum: 0, rows: 11 });
  });

  it('applies concurrent twins of one operation once', async () => {
    const { id: userId } = await makeUser();
    const { db } = services();
    const results = await Promise.all(Array.from({ length: 8 }, () =>
      db.transaction((trx) => credit(trx, { userId, kind: 'purchase', amount: 25, reference: 'pay-1' }))));
    expect(results.filter((result) => result !== null)).to.have.length(1);
    expect(await state(userId)).to.deep.equal({ balance: 25, sum: 25, rows: 1 });
  });
});
