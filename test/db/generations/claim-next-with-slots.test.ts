import { expect } from 'chai';
import { claimNextWithSlots } from '../../../db/generations/claim-next-with-slots';
import { keyFingerprint, syncProviderAccounts } from '../../../pool/accounts';
import { waitingGenerations } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';

describe('claimNextWithSlots: the next tickets, their generations and free slots in one statement', () => {
  let generations: string[];
  const db = () => services().db;
  const processId = () => services().processSession.id;
  const claim = (room: number, knownAccounts: string[] | null = null) =>
    claimNextWithSlots(db(), room, { claimS: 60, leaseS: 60, processId: processId(), knownAccounts });
  const leasedSlots = () => db()('provider_slots').whereNotNull('generation_id').orderBy(['slot_no', 'account_id']).select('account_id', 'slot_no', 'generation_id');
  const accountIdOf = async (apiKey: string) => (await db()('provider_accounts').where({ key_fingerprint: keyFingerprint(apiKey) }).first('id')).id as number;
  const ticketStates = async (ids: string[]) => {
    const rows: { id: string; state: string }[] = await db()('pgboss.job').where({ name: 'generation-submit' }).whereIn('id', ids).select('id', 'state');
    const stateOf = new Map(rows.map((row) => [row.id, row.state]));
    return ids.map((id) => stateOf.get(id));
  };

  beforeEach(async () => {
    await resetDatabase();
    // Each generation's first ticket carries the generation's own id.
    generations = await waitingGenerations(12);
  });

  it('pairs the line in its order with the free slots (slot 0 of every account first), recording claim, attempt, lease and the started ticket', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 2 }, { kind: 'simulator', apiKey: 'b', slots: 1 }]);
    const [a, b] = [await accountIdOf('a'), await accountIdOf('b')];
    const round = await claim(5);
    expect(round).to.deep.include({ waiting: 5, freeSlots: 3, passedOver: [] });
    expect(round.claims.map(({ lease, jobId }) => ({ ...lease, jobId }))).to.deep.equal([
      { generationId: generations[0], accountId: a, slotNo: 0, jobId: generations[0] },
      { generationId: generations[1], accountId: b, slotNo: 0, jobId: generations[1] },
      { generationId: generations[2], accountId: a, slotNo: 1, jobId: generations[2] },
    ]);
    expect(round.claims[0].generation).to.include({ id: generations[0], model: 'image', inputs_checked: false });
    expect(round.claims[0].generation.inputs).to.have.length(1);
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
    // Only the claimed tickets left the line; the next keep their places.
    expect(await ticketStates(generations.slice(0, 5))).to.deep.equal(['active', 'active', 'active', 'created', 'created']);
    expect(await claim(5)).to.deep.include({ waiting: 5, freeSlots: 0, claims: [], passedOver: [] });
  });

  it('passes over a generation that is not waiting (failed, under a live claim, or with an unresolved submission): its slot stays free, its ticket untouched', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 4 }]);
    await db()('generations').where({ id: generations[0] }).update({ status: 'failed', error_code: 'canceled', finished_at: db().fn.now() });
    await db()('generations').where({ id: generations[1] }).update({ dispatch_until: db().raw("now() + interval '1 minute'") });
    await db()('generations').where({ id: generations[2] }).update({ submission_account_id: await accountIdOf('a') });
    const round = await claim(4);
    expect(round.claims.map(({ generation }) => generation.id)).to.deep.equal([generations[3]]);
    expect(round.passedOver).to.have.deep.members([
      { jobId: generations[0], pending: false },
      { jobId: generations[1], pending: true },
      { jobId: generations[2], pending: true },
    ]);
    expect(await leasedSlots()).to.deep.equal([{ account_id: await accountIdOf('a'), slot_no: 3, generation_id: generations[3] }]);
    expect(await ticketStates(generations.slice(0, 4))).to.deep.equal(['created', 'created', 'created', 'active']);
  });

  it('counts a slot whose lease ran out as free, and leases only slots of accounts the caller knows', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 1 }, { kind: 'simulator', apiKey: 'b', slots: 1 }]);
    await db()('provider_slots').where({ account_id: await accountIdOf('a') }).update({ generation_id: generations[11], lease_expires_at: db().raw("now() - interval '1 second'") });
    const round = await claim(2, [keyFingerprint('a')]);
    expect(round.claims.map(({ lease }) => lease)).to.deep.equal([{ generationId: generations[0], accountId: await accountIdOf('a'), slotNo: 0 }]);
    expect(round).to.deep.include({ waiting: 2, freeSlots: 1 });
  });

  it('finds no free slot while no ticket waits in line', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 2 }]);
    await db()('pgboss.job').where({ name: 'generation-submit' }).delete();
    expect(await claim(4)).to.deep.equal({ claims: [], passedOver: [], waiting: 0, freeSlots: 0 });
    expect(await leasedSlots()).to.deep.equal([]);
  });

  it('never gives one slot or one ticket to two workers claiming at once, nor claims a generation without a slot', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 3 }, { kind: 'simulator', apiKey: 'b', slots: 2 }]);
    // Six workers, each with room for two, all at once.
    const claims = (await Promise.all(Array.from({ length: 6 }, () => claim(2)))).flatMap((round) => round.claims);
    expect(claims).to.have.length(5);
    expect(new Set(claims.map(({ lease }) => `${lease.accountId}:${lease.slotNo}`)).size).to.equal(5);
    expect(new Set(claims.map(({ jobId }) => jobId)).size).to.equal(5);
    const leased = await leasedSlots();
    expect(leased.map((slot) => slot.generation_id).sort()).to.deep.equal(claims.map(({ generation }) => generation.id).sort());
    const claimed = await db()('generations').whereNotNull('claimed_by').select('id', 'submission_account_id');
    expect(claimed).to.have.length(5);
    for (const row of claimed) expect(leased.find((slot) => slot.generation_id === row.id)?.account_id).to.equal(row.submission_account_id);
    expect((await ticketStates(generations)).filter((state) => state === 'active')).to.have.length(5);
  });
});
