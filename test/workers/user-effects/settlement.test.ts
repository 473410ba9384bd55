import { expect } from 'chai';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PushJob } from '../../../db/push/push-job';
import { removeByOperator } from '../../../db/user-effects/remove-by-operator';
import { settleEarning } from '../../../db/user-effects/settle-earning';
import { startRole } from '../../../scripts/bench-processes';
import { pushText } from '../../../workers/push/push-messages';
import { expectLedgerConsistent, transactionsOf } from '../../accounts';
import { resetDatabase, serviceEnv, services } from '../../harness';
import { earningOf, userEffectIn } from '../../user-effect-fixtures';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { jobDataOf } from '../../jobs';

async function pushJobs(kind: string): Promise<PushJob[]> {
  return jobDataOf('push-send', { kind });
}

describe('author earnings: settlement and reversal', function () {
  this.timeout(30_000);
  beforeEach(() => resetDatabase());

  it('settles a due earning once: one effect_earned row of its amount (reference: the earning) and one push; a second settle changes nothing', async () => {
    const { db, boss } = services();
    const author = await makeUser({ locale: 'en' });
    const { earningId, userEffectId } = await earningOf(author.id, { amount: 8 });
    const settled = await db.transaction((trx) => settleEarning(trx, boss, earningId));
    expect(settled).to.include({ id: earningId, status: 'settled' });
    expect(await db.transaction((trx) => settleEarning(trx, boss, earningId))).to.equal(null);
    expect(await transactionsOf(author.id)).to.deep.equal([{ kind: 'effect_earned', amount: 8, reference: earningId }]);
    const [push] = await pushJobs('effect_earned');
    expect(push).to.deep.include({ userId: author.id, kind: 'effect_earned', reference: earningId });
    expect(push.data).to.include({ earning_id: earningId, user_effect_id: userEffectId, amount: '8', status: 'settled' });
    expect(pushText('en', push)).to.deep.equal({ title: 'You earned credits', body: 'Credits for your effect are on your balance.' });
    expect(pushText('ru', push)!.title).to.equal('Вы заработали кредиты');
    await expectLedgerConsistent();
  });

  it('does not settle before settles_at', async () => {
    const { db, boss } = services();
    const author = await makeUser();
    const { earningId } = await earningOf(author.id, { settlesInS: 60 });
    expect(await db.transaction((trx) => settleEarning(trx, boss, earningId))).to.equal(null);
    expect(await transactionsOf(author.id)).to.deep.equal([]);
  });

  it('an operator removal archives, hides, reverses the pending earnings (settled ones stay) and pushes effect_removed; reversed ones never settle', async () => {
    const { db, boss } = services();
    const author = await makeUser();
    const { earningId: settledId, userEffectId } = await earningOf(author.id, { amount: 4 });
    await db.transaction((trx) => settleEarning(trx, boss, settledId));
    const pending = await earningOf(author.id, { amount: 2, settlesInS: -1, userEffectId });
    const later = await earningOf(author.id, { amount: 6, settlesInS: 600, userEffectId });
    const removal = await removeByOperator(db, boss, { userEffectId, reason: 'copyrighted sample' });
    expect(removal).to.include({ outcome: 'archived', reversedEarnings: 2 });
    const row = await db('user_effects').where({ id: userEffectId }).first();
    expect(row).to.include({ status: 'archived', archived_by: 'operator', archive_reason: 'copyrighted sample' });
    expect(await db('effects').where({ id: row.effect_id }).first()).to.include({ hidden: true, listed: false });
    const statuses = await db('user_effect_earnings').orderBy('amount').pluck('status');
    expect(statuses).to.deep.equal(['reversed', 'settled', 'reversed']);
    expect(await db.transaction((trx) => settleEarning(trx, boss, pending.earningId))).to.equal(null);
    expect(await db('user_effect_earnings').where({ id: later.earningId }).first()).to.include({ status: 'reversed' });
    expect(await transactionsOf(author.id)).to.deep.equal([{ kind: 'effect_earned', amount: 4, reference: settledId }]);
    const [push] = await pushJobs('effect_removed');
    expect(push).to.deep.include({ userId: author.id, reference: userEffectId });
    expect(push.data).to.include({ user_effect_id: userEffectId, status: 'archived' });
    expect(pushText('ru', push)!.title).to.equal('Эффект снят с публикации');
    expect(await removeByOperator(db, boss, { userEffectId, reason: 'again' })).to.deep.equal({ outcome: 'already_archived' });
    expect(await pushJobs('effect_removed')).to.have.length(1);
    expect(await removeByOperator(db, boss, { userEffectId: '00000000-0000-4000-8000-000000000000', reason: 'x' })).to.deep.equal({ outcome: 'not_found' });
  });

  it('an operator may remove any status but archived; each sends its push', async () => {
    const { db, boss } = services();
    const author = await makeUser();
    for (const status of ['processing', 'approved', 'private', 'rejected'] as const) {
      const row = await userEffectIn(author.id, status);
      expect((await removeByOperator(db, boss, { userEffectId: row.id, reason: 'policy' })).outcome).to.equal('archived');
    }
    expect(await pushJobs('effect_removed')).to.have.length(4);
  });
});

describe('author earnings: two scheduler processes settle a batch exactly once', function () {
  this.timeout(180_000);
  let dataDir: string;
  const roles: Awaited<ReturnType<typeof startRole>>[] = [];

  before(async () => {
    await resetDatabase();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'effects-earnings-'));
    chmodSync(dataDir, 0o755);
  });
  after(async () => {
    for (const role of roles) if (role.child.exitCode === null) role.child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('each earning due is settled by one of them: one effect_earned row and one push each, balances equal their rows', async () => {
    const { db } = services();
    const authors = await Promise.all(Array.from({ length: 6 }, () => makeUser()));
    const earnings: { earningId: string; authorId: string }[] = [];
    for (const [index, author] of authors.entries()) {
      const first = await earningOf(author.id, { amount: 1 + index, settlesInS: 3 });
      earnings.push({ ...first, authorId: author.id });
      for (let more = 0; more < 9; more += 1) {
        earnings.push({ ...(await earningOf(author.id, { amount: 1 + more, settlesInS: 3, userEffectId: first.userEffectId })), authorId: author.id });
      }
    }
    const env: NodeJS.ProcessEnv = { ...process.env, ...serviceEnv(), PROVIDER_URL: 'http://127.0.0.1:9', DATA_DIR: dataDir, BILLING_DAY_S: '1' };
    roles.push(...await Promise.all([startRole('scheduler', env), startRole('scheduler', env)]));

    await eventually(async () => {
      const [{ settled }] = await db('user_effect_earnings').where({ status: 'settled' }).count<{ settled: number }[]>('* as settled');
      return Number(settled);
    }, (settled) => settled === earnings.length, 60_000);

    const rows = await db('credit_transactions').where({ kind: 'effect_earned' }).select('user_id', 'amount', 'reference');
    expect(rows).to.have.length(earnings.length);
    const amounts = new Map((await db('user_effect_earnings').select('id', 'amount', 'user_id')).map((row: { id: string; amount: number; user_id: string }) => [row.id, row]));
    for (const row of rows) expect(amounts.get(row.reference)).to.include({ amount: row.amount, user_id: row.user_id });
    const pushes = await pushJobs('effect_earned');
    expect(pushes.map((push) => push.reference).sort()).to.deep.equal(earnings.map((earning) => earning.earningId).sort());
    await expectLedgerConsistent();

    const exits = roles.map((role) => new Promise((resolve) => role.child.once('exit', resolve)));
    for (const role of roles) role.child.kill('SIGTERM');
    expect(await Promise.all(exits)).to.deep.equal([0, 0]);
  });
});
