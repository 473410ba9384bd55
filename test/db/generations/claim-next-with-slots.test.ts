import { expect } from 'chai';
import type { ProviderKind } from '../../../common/model-route';
import { claimNextWithSlots } from '../../../db/generations/claim-next-with-slots';
import { submitQueueOf } from '../../../db/queues';
import { keyFingerprint, syncProviderAccounts } from '../../../pool/accounts';
import { waitingGenerations } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';

describe('claimNextWithSlots: the next tickets of each kind, their generations and free slots of that kind in one transaction', () => {
  let generations: string[];
  const db = () => services().db;
  const processId = () => services().processSession.id;
  const claim = (room: number, knownAccounts: string[] | null = null, kinds: ProviderKind[] = ['simulator']) =>
    claimNextWithSlots(db(), services().boss, room, { claimS: 60, leaseS: 60, processId: processId(), knownAccounts, kinds, probeHoldMs: 30_000 });
  const leasedSlots = () => db()('provider_slots').whereNotNull('generation_id').orderBy(['slot_no', 'account_id']).select('account_id', 'slot_no', 'generation_id');
  const accountIdOf = async (apiKey: string) => (await db()('provider_accounts').where({ key_fingerprint: keyFingerprint(apiKey) }).first('id')).id as number;
  /** The tickets' states as pg-boss answers them. */
  const ticketStates = (ids: string[], kind: ProviderKind = 'simulator') =>
    Promise.all(ids.map(async (id) => (await services().boss.getJobById(submitQueueOf(kind), id))?.state));

  beforeEach(async () => {
    await resetDatabase();
    // Each generation's first ticket carries the generation's own id.
    generations = await waitingGenerations(12);
  });

  it('takes the line in its order onto the free slots (slot 0 of every account first), recording claim, attempt, lease and the started ticket', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 2 }, { kind: 'simulator', apiKey: 'b', slots: 1 }]);
    const [a, b] = [await accountIdOf('a'), await accountIdOf('b')];
    // Made through the API, which read their photos; one as the replay makes it, without that read.
    await db()('generations').where({ id: generations[1] }).update({ photo_headers_checked: false });
    const round = await claim(5);
    expect(round).to.deep.include({ waiting: 5, freeSlots: 3, passedOver: 0 });
    expect(round.claims.map(({ generation, jobId }) => [generation.id, jobId]).sort()).to.deep.equal(generations.slice(0, 3).map((id) => [id, id]).sort());
    expect(round.claims.map(({ lease }) => `${lease.accountId}:${lease.slotNo}`).sort()).to.deep.equal([`${a}:0`, `${a}:1`, `${b}:0`].sort());
    const first = round.claims.find(({ generation }) => generation.id === generations[0])!;
    expect(first.generation).to.deep.include({ route: { model: 'image' }, provider_kind: 'simulator', inputs_checked: true });
    expect(round.claims.find(({ generation }) => generation.id === generations[1])!.generation, 'its photos to be read at submission').to.deep.include({ inputs_checked: false });
    expect(first.generation.inputs).to.have.length(1);
    expect((await leasedSlots()).map((slot) => slot.generation_id).sort()).to.deep.equal(generations.slice(0, 3).sort());
    const rows = await db()('generations').whereIn('id', generations.slice(0, 5)).select('id', 'status', 'claimed_by', 'submission_account_id', 'dispatch_attempts', 'dispatch_until');
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const { generation, lease } of round.claims) {
      expect(byId.get(generation.id)).to.include({ status: 'pending', claimed_by: processId(), submission_account_id: lease.accountId, dispatch_attempts: 1 });
      expect(byId.get(generation.id).dispatch_until.getTime()).to.be.above(Date.now() + 50_000);
    }
    for (const id of generations.slice(3, 5)) {
      expect(byId.get(id), 'no slot left: not claimed at all').to.include({ claimed_by: null, submission_account_id: null, dispatch_attempts: 0, dispatch_until: null });
    }
    // Only the claimed tickets left the line; the next keep their places.
    expect(await ticketStates(generations.slice(0, 5))).to.deep.equal(['active', 'active', 'active', 'created', 'created']);
    expect(await claim(5)).to.deep.include({ waiting: 5, freeSlots: 0, claims: [], passedOver: 0 });
  });

  it('passes over a generation that is not waiting (failed, under a live claim, or with an unresolved submission): its slot stays free, its ticket back at its place or finished', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 4 }]);
    await db()('generations').where({ id: generations[0] }).update({ status: 'failed', error_code: 'canceled', finished_at: db().fn.now() });
    // Counted as waiting (no claim), its generation is held by another transaction when the round comes.
    const holder = await db().transaction();
    try {
      await holder('generations').where({ id: generations[1] }).forUpdate().select('id');
      await db()('generations').where({ id: generations[2] }).update({ submission_account_id: await accountIdOf('a') });
      const round = await claim(4);
      expect(round.claims.map(({ generation }) => generation.id)).to.deep.equal([generations[3]]);
      expect(round.passedOver).to.equal(3);
    } finally {
      await holder.rollback();
    }
    expect((await leasedSlots()).map((slot) => slot.generation_id)).to.deep.equal([generations[3]]);
    // The failed one's ticket is done; the others are back at their places, and the held one goes next.
    expect(await ticketStates(generations.slice(0, 5))).to.deep.equal(['completed', 'created', 'created', 'active', 'created']);
    const next = await claim(4);
    expect(next.claims.map(({ generation }) => generation.id)).to.have.members([generations[1], generations[4]]);
  });

  it('counts a slot whose lease ran out as free, and leases only slots of accounts the caller knows', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 1 }, { kind: 'simulator', apiKey: 'b', slots: 1 }]);
    await db()('provider_slots').where({ account_id: await accountIdOf('a') }).update({ generation_id: generations[11], lease_expires_at: db().raw("now() - interval '1 second'") });
    const round = await claim(2, [keyFingerprint('a')]);
    expect(round.claims.map(({ lease }) => lease)).to.deep.equal([{ generationId: generations[0], accountId: await accountIdOf('a'), slotNo: 0 }]);
    expect(round).to.deep.include({ waiting: 2, freeSlots: 1 });
  });

  it('locks no slot and fetches no ticket while no generation waits in line', async () => {
    await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'a', slots: 2 }]);
    await db()('generations').update({ status: 'failed', error_code: 'pool_timeout', finished_at: db().fn.now() });
    expect(await claim(4)).to.deep.equal({ claims: [], passedOver: 0, waiting: 0, freeSlots: 0 });
    expect(await leasedSlots()).to.deep.equal([]);
    expect(await ticketStates(generations.slice(0, 2))).to.deep.equal(['created', 'created']);
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

  describe('provider kinds', () => {
    let replicate: string[];

    beforeEach(async () => {
      replicate = await waitingGenerations(4, 'replicate');
    });

    it('keeps each kind in its own line: a generation takes a slot of its own kind only, whatever waited longer', async () => {
      await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'sim', slots: 2 }, { kind: 'replicate', apiKey: 'r8_token', slots: 1 }]);
      expect((await db()('generations').whereIn('id', replicate).pluck('provider_kind'))).to.deep.equal(['replicate', 'replicate', 'replicate', 'replicate']);
      const round = await claim(8, null, ['simulator', 'replicate']);
      const byKind = (kind: ProviderKind) => round.claims.filter(({ generation }) => generation.provider_kind === kind);
      expect(byKind('simulator').map(({ generation }) => generation.id)).to.have.members(generations.slice(0, 2));
      expect(byKind('replicate').map(({ generation }) => generation.id)).to.deep.equal([replicate[0]]);
      expect(byKind('replicate')[0].lease.accountId).to.equal(await accountIdOf('r8_token'));
      for (const { lease } of byKind('simulator')) expect(lease.accountId).to.equal(await accountIdOf('sim'));
      expect(await ticketStates(replicate, 'replicate')).to.deep.equal(['active', 'created', 'created', 'created']);
      expect(round).to.deep.include({ waiting: 8 + 4, freeSlots: 3 }, 'each line counted up to the room');
    });

    it('a full line of one kind does not hold the other: with every replicate slot taken, the simulator line still moves', async () => {
      await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'sim', slots: 1 }, { kind: 'replicate', apiKey: 'r8_token', slots: 1 }]);
      const first = await claim(8, null, ['simulator', 'replicate']);
      expect(first.claims).to.have.length(2);
      // The simulator's slot frees; the replicate one stays busy: only the simulator line moves.
      await db()('provider_slots').where({ account_id: await accountIdOf('sim') }).update({ generation_id: null, lease_expires_at: null });
      const second = await claim(8, null, ['simulator', 'replicate']);
      expect(second.claims.map(({ generation }) => generation.id)).to.deep.equal([generations[1]]);
      expect(await ticketStates(replicate, 'replicate')).to.deep.equal(['active', 'created', 'created', 'created']);
    });

    it('serves only the kinds it is asked for', async () => {
      await syncProviderAccounts(db(), [{ kind: 'simulator', apiKey: 'sim', slots: 2 }, { kind: 'replicate', apiKey: 'r8_token', slots: 2 }]);
      const round = await claim(8, null, ['replicate']);
      expect(round.claims.map(({ generation }) => generation.id)).to.deep.equal(replicate.slice(0, 2));
      expect(await ticketStates(generations.slice(0, 2))).to.deep.equal(['created', 'created']);
    });
  });
});
