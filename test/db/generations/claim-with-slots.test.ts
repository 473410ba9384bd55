import { expect } from 'chai';
import { claimWithSlots } from '../../../db/generations/claim-with-slots';
import { keyFingerprint, syncProviderAccounts } from '../../../pool/accounts';
import { waitingGenerations } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';

describe('claimWithSlots: a waiting generation claimed and leased a slot in one statement', () => {
  let generations: string[];
  const db = () => services().db;
  const processId = () => services().processSession.id;
  const claim = (ids: string[], knownAccounts: string[] | null = null) =>
    db().transaction((trx) => claimWithSlots(trx, ids, { claimS: 60, leaseS: 60, processId: processId(), knownAccounts }));
  const leasedSlots = () => db()('provider_slots').whereNotNull('generation_id').orderBy(['slot_no', 'account_id']).select('account_id', 'slot_no', 'generation_id');
  const accountIdOf = async (apiKey: string) => (await db()('provider_accounts').where({ key_fingerprint: keyFingerprint(apiKey) }).first('id')).id as number;

  beforeEach(async () => {
    await resetDatabase();
    generations = await waitingGenerations(12);
  });

  it('pairs the line in its order with the free slots (slot 0 of every account first), recording claim, attempt and lease', async () => {
    await syncProviderAccounts(db(), [{ apiKey: 'a', slots: 2 }, { apiKey: 'b', slots: 1 }]);
    const [a, b] = [await accountIdOf('a'), await accountIdOf('b')];
    const claims = await claim(generations.slice(0, 5));
    expect(claims.map(({ lease }) => lease)).to.deep.equal([
      { generationId: generations[0], accountId: a, slotNo: 0 },
      { generationId: generations[1], accountId: b, slotNo: 0 },
      { generationId: generations[2], accountId: a, slotNo: 1 },
    ]);
    expect(claims[0].generation).to.include({ id: generations[0], model: 'image', inputs_checked_at: null });
    expect(await leasedSlots()).to.deep.equal([
      { account_id: a, slot_no: 0, generation_id: generations[0] },
      { account_id: b, slot_no: 0, generation_id: generations[1] },
      { account_id: a, slot_no: 1, generation_id: generations[2] },
    ]);
    const rows = await db()('generations').whereIn('id', generations.slice(0, 5)).select('id', 'status', 'claimed_by', 'submission_account_id', 'dispatch_attempts', 'dispatch_until');
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(generations[1])).to.include({ status: 'pending', claimed_by: processId(), submission_account_id: b, dispatch_attempts: 1 });
    expect(byId.get(generations[1]).dispatch_until.getTime()).to.be.above(Date.now() + 50_000);
    for (const id of generations.slice(3, 5)) {
      expect(byId.get(id), 'no slot left: not claimed at all').to.include({ claimed_by: null, submission_account_id: null, dispatch_attempts: 0, dispatch_until: null });
    }
  });

  it('skips a generation that is not waiting (failed, under a live claim, or with an unresolved submission) and leaves its slot free', async () => {
    await syncProviderAccounts(db(), [{ apiKey: 'a', slots: 4 }]);
    await db()('generations').where({ id: generations[0] }).update({ status: 'failed', error_code: 'canceled', finished_at: db().fn.now() });
    await db()('generations').where({ id: generations[1] }).update({ dispatch_until: db().raw("now() + interval '1 minute'") });
    await db()('generations').where({ id: generations[2] }).update({ submission_account_id: await accountIdOf('a') });
    const claims = await claim(generations.slice(0, 4));
    expect(claims.map(({ generation }) => generation.id)).to.deep.equal([generations[3]]);
    expect(await leasedSlots()).to.deep.equal([{ account_id: await accountIdOf('a'), slot_no: 3, generation_id: generations[3] }]);
    // The slots paired with the skipped ones are free for the next round.
    expect((await claim(generations.slice(4, 8))).map(({ lease }) => lease.slotNo)).to.deep.equal([0, 1, 2]);
  });

  it('counts a slot whose lease ran out as free, and leases only slots of accounts the caller knows', async () => {
    await syncProviderAccounts(db(), [{ apiKey: 'a', slots: 1 }, { apiKey: 'b', slots: 1 }]);
    await db()('provider_slots').where({ account_id: await accountIdOf('a') }).update({ generation_id: generations[11], lease_expires_at: db().raw("now() - interval '1 second'") });
    const claims = await claim(generations.slice(0, 2), [keyFingerprint('a')]);
    expect(claims.map(({ lease }) => lease)).to.deep.equal([{ generationId: generations[0], accountId: await accountIdOf('a'), slotNo: 0 }]);
    expect(await claim([], null)).to.deep.equal([]);
  });

  it('never gives one slot to two workers claiming at once, nor claims a generation without a slot', async () => {
    await syncProviderAccounts(db(), [{ apiKey: 'a', slots: 3 }, { apiKey: 'b', slots: 2 }]);
    // Six workers, each with its own two tickets of the line, all at once.
    const claims = (await Promise.all([0, 2, 4, 6, 8, 10].map((start) => claim(generations.slice(start, start + 2))))).flat();
    expect(claims).to.have.length(5);
    expect(new Set(claims.map(({ lease }) => `${lease.accountId}:${lease.slotNo}`)).size).to.equal(5);
    const leased = await leasedSlots();
    expect(leased.map((slot) => slot.generation_id).sort()).to.deep.equal(claims.map(({ generation }) => generation.id).sort());
    const claimed = await db()('generations').whereNotNull('claimed_by').select('id', 'submission_account_id');
    expect(claimed).to.have.length(5);
    for (const row of claimed) expect(leased.find((slot) => slot.generation_id === row.id)?.account_id).to.equal(row.submission_account_id);
  });
});
