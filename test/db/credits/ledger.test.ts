import { expect } from 'chai';
import { burnPlanCredits, credit, debit, debitUpTo, grantPlanCredits, planCreditsOf, Shortfall } from '../../../db/credits/ledger';
import { resetDatabase, services } from '../../harness';
import { expectPlanBucketsConsistent, periodPaymentOf } from '../../plan-buckets';
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

  it('debits: answers the shortfall (the amount and the balance it found) and writes nothing when the balance is lower', async () => {
    const { id: userId } = await makeUser({ balance: 5 });
    const result = await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 6, reference: 'gen-1' }));
    expect(result).to.deep.equal(new Shortfall(6, 5));
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
    // Each loser's shortfall quotes the balance it found under the lock, after the ten winners: never a stale 100.
    expect(results.filter((result) => result instanceof Shortfall)).to.deep.equal(Array.from({ length: 10 }, () => new Shortfall(10, 0)));
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
  describe('plan credits', () => {
    const inDays = (days: number) => new Date(Date.now() + days * 86_400_000);
    const grant = async (userId: string, amount: number, expiresAt: Date, subscriptionId?: string) => {
      const period = await periodPaymentOf(userId, subscriptionId);
      const entry = await services().db.transaction((trx) => grantPlanCredits(trx, { userId, ...period, amount, expiresAt }));
      const bucket = await services().db('plan_credit_buckets').where({ payment_id: period.paymentId }).first('id');
      return { ...period, entry, bucket: bucket.id as string };
    };
    const planShare = async (userId: string, kind: string, reference: string) =>
      (await services().db('credit_transactions').where({ user_id: userId, kind, reference }).first('plan_share')).plan_share;
    const bucketCredits = async (bucket: string) => (await services().db('plan_credit_buckets').where({ id: bucket }).first('credits')).credits;

    it('a grant is a bucket inside the balance and one plan_grant row (the period\'s payment as reference), once', async () => {
      const { id: userId } = await makeUser({ balance: 5 });
      const week = await grant(userId, 150, inDays(7));
      expect(week.entry).to.include({ kind: 'plan_grant', amount: 150, balanceAfter: 155, reference: week.paymentId });
      expect(await planShare(userId, 'plan_grant', week.paymentId)).to.deep.equal([{ bucket: week.bucket, amount: 150 }]);
      expect(await planCreditsOf(services().db, userId)).to.deep.equal({ credits: 150, expiresAt: (await services().db('plan_credit_buckets').where({ id: week.bucket }).first('expires_at')).expires_at });
      const again = await services().db.transaction((trx) => grantPlanCredits(trx, { userId, subscriptionId: week.subscriptionId, paymentId: week.paymentId, amount: 150, expiresAt: inDays(7) }));
      expect(again).to.equal(null);
      expect(await state(userId)).to.deep.equal({ balance: 155, sum: 155, rows: 2 });
    });

    it('a reserve spends plan credits first, the bucket that burns soonest first, and says so on its one row', async () => {
      const { id: userId } = await makeUser({ balance: 50 });
      const month = await grant(userId, 100, inDays(30));
      const week = await grant(userId, 30, inDays(7));
      const entry = await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 60, reference: 'gen-1' }));
      expect(entry).to.include({ amount: -60, balanceAfter: 120 });
      expect(await planShare(userId, 'reserve', 'gen-1')).to.deep.equal([{ bucket: week.bucket, amount: 30 }, { bucket: month.bucket, amount: 30 }]);
      expect([await bucketCredits(week.bucket), await bucketCredits(month.bucket)]).to.deep.equal([0, 70]);
      // Past the plan credits, the user's own.
      await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 100, reference: 'gen-2' }));
      expect(await planShare(userId, 'reserve', 'gen-2')).to.deep.equal([{ bucket: month.bucket, amount: 70 }]);
      expect((await planCreditsOf(services().db, userId)).credits).to.equal(0);
      expect(await state(userId)).to.deep.include({ balance: 20 });
      await expectPlanBucketsConsistent();
    });

    it('a refund gives each part back to its bucket; a partial one gives plan parts back first', async () => {
      const { id: userId } = await makeUser({ balance: 50 });
      const week = await grant(userId, 30, inDays(7));
      await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 60, reference: 'gen-1' }));
      await services().db.transaction((trx) => credit(trx, { userId, kind: 'refund', amount: 40, reference: 'gen-1' }));
      expect(await planShare(userId, 'refund', 'gen-1')).to.deep.equal([{ bucket: week.bucket, amount: 30 }]);
      expect(await bucketCredits(week.bucket)).to.equal(30);
      expect(await state(userId)).to.deep.include({ balance: 60 });
      await expectPlanBucketsConsistent();
    });

    it('a refund after the bucket burned: the refund row, then a plan_expired row burning the plan part at once', async () => {
      const { id: userId } = await makeUser({ balance: 10 });
      const week = await grant(userId, 30, inDays(7));
      await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 35, reference: 'gen-1' }));
      expect(await services().db.transaction((trx) => burnPlanCredits(trx, { userId, subscriptionId: week.subscriptionId }))).to.deep.equal([]);
      await services().db.transaction((trx) => credit(trx, { userId, kind: 'refund', amount: 35, reference: 'gen-1' }));
      const rows = await services().db('credit_transactions').where({ user_id: userId }).orderBy('seq').select('kind', 'amount', 'balance_after', 'reference');
      expect(rows.slice(-2)).to.deep.equal([
        { kind: 'refund', amount: 35, balance_after: 40, reference: 'gen-1' },
        { kind: 'plan_expired', amount: -30, balance_after: 10, reference: 'gen-1' },
      ]);
      await expectPlanBucketsConsistent();
    });

    it('burns what is left of the subscription\'s open bucket once (one row, the period\'s payment as reference); other subscriptions keep theirs', async () => {
      const { id: userId } = await makeUser({ balance: 5 });
      const week = await grant(userId, 30, inDays(7));
      const other = await grant(userId, 20, inDays(30));
      await services().db.transaction((trx) => debit(trx, { userId, kind: 'reserve', amount: 12, reference: 'gen-1' }));
      const burned = await services().db.transaction((trx) => burnPlanCredits(trx, { userId, subscriptionId: week.subscriptionId }));
      expect(burned.map((entry) => [entry.kind, entry.amount, entry.reference])).to.deep.equal([['plan_expired', -18, week.paymentId]]);
      expect(await services().db.transaction((trx) => burnPlanCredits(trx, { userId, subscriptionId: week.subscriptionId }))).to.deep.equal([]);
      expect(await planCreditsOf(services().db, userId)).to.include({ credits: 20 });
      expect(await state(userId)).to.deep.include({ balance: 25 });
      expect(other.bucket).to.be.a('string');
      await expectPlanBucketsConsistent();
    });

    it('a revoked purchase never takes plan credits: only the credits outside the buckets', async () => {
      const { id: userId } = await makeUser({ balance: 40 });
      await grant(userId, 100, inDays(7));
      const revoked = await services().db.transaction((trx) => debitUpTo(trx, { userId, kind: 'purchase_revoke', amount: 500, reference: 'pay-1' }));
      expect(revoked).to.include({ amount: -40, balanceAfter: 100 });
      expect((await planCreditsOf(services().db, userId)).credits).to.equal(100);
      await expectPlanBucketsConsistent();
    });
  });
});
