import { expect } from 'chai';
import { markProcessing } from '../../../db/generations/mark-processing';
import { schedulePoll } from '../../../db/generations/schedule-poll';
import { createKnex } from '../../../db/knex';
import { syncProviderAccounts } from '../../../pool/accounts';
import { defaultPollPacing, insertGeneration } from '../../generation-fixtures';
import { databaseUrl, resetDatabase, services } from '../../harness';
import { makeUser } from '../../users';

describe('schedulePoll: the next poll of a running task and its slot\'s lease, in one statement', () => {
  beforeEach(async () => {
    await resetDatabase();
    await syncProviderAccounts(services().db, [{ kind: 'simulator', apiKey: 'a', slots: 4 }, { kind: 'simulator', apiKey: 'b', slots: 2 }]);
  });

  /** A processing task started `ranS` ago, claimed by a poll, on a free slot whose lease it takes for a second. */
  async function polledTask(ranS: number): Promise<string> {
    const { db, processSession } = services();
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'processing');
    await db('generations').where({ id }).update({
      provider_task_id: `task-${id}`, claimed_by: processSession.id, started_at: db.raw("now() - ? * interval '1 second'", [ranS]),
    });
    const slot = await db('provider_slots').whereNull('generation_id').orderBy(['account_id', 'slot_no']).first('account_id', 'slot_no');
    await db('provider_slots').where(slot).update({ generation_id: id, lease_expires_at: db.raw("now() + interval '1 second'") });
    await db('generations').where({ id }).update({ provider_account_id: slot.account_id });
    return id;
  }

  /** A task callback freed a slot of account `accountNo` (1 or 2) `agoS` seconds ago. */
  async function calledBack(accountNo: number, agoS: number): Promise<void> {
    const { db } = services();
    const [account] = await db('provider_accounts').orderBy('id').offset(accountNo - 1).limit(1).pluck('id');
    const slot = await db('provider_slots').where({ account_id: account }).whereNull('generation_id').orderBy('slot_no', 'desc').first('slot_no');
    await db('provider_slots').where({ account_id: account, slot_no: slot.slot_no }).update({ called_back_at: db.raw("now() - ? * interval '1 second'", [agoS]) });
  }

  const inMs = async (id: string) => (await services().db('generations').where({ id }).first('next_poll_at')).next_poll_at.getTime() - Date.now();

  const state = async (id: string) => ({
    generation: await services().db('generations').where({ id }).first('next_poll_at', 'claimed_by'),
    lease: (await services().db('provider_slots').where({ generation_id: id }).first('lease_expires_at'))?.lease_expires_at as Date | undefined,
  });

  it('ends the claim, schedules the poll after 1/15 of the run so far within its bounds, and keeps the slot another leaseS', async () => {
    const oneConnection = createKnex(databaseUrl(), 1);
    try {
      const young = await polledTask(3);
      const old = await polledTask(3600);
      await schedulePoll(oneConnection, young, { ...defaultPollPacing, leaseS: 90 });
      await schedulePoll(oneConnection, old, { ...defaultPollPacing, leaseS: 90 });
      // Its commit skipped the flush for its own transaction only.
      expect((await oneConnection.raw('show synchronous_commit')).rows).to.deep.equal([{ synchronous_commit: 'on' }]);
      const [first, second] = [await state(young), await state(old)];
      expect(first.generation.claimed_by).to.equal(null);
      expect(first.generation.next_poll_at.getTime() - Date.now(), '3 s / 15').to.be.within(0, 400);
      expect(second.generation.next_poll_at.getTime() - Date.now(), 'capped at maxMs').to.be.within(4000, 5000);
      for (const { lease } of [first, second]) expect(lease!.getTime() - Date.now()).to.be.within(85_000, 90_000);
    } finally {
      await oneConnection.destroy();
    }
  });

  it('changes nothing once the result is stored or the generation ended: neither the poll nor the lease', async () => {
    const { db } = services();
    const stored = await polledTask(3);
    await db('generations').where({ id: stored }).update({ result_stored_at: db.fn.now() });
    const ended = await polledTask(3);
    await db('generations').where({ id: ended }).update({ status: 'failed', error_code: 'provider_error', finished_at: db.fn.now() });
    for (const id of [stored, ended]) {
      const before = await state(id);
      await schedulePoll(db, id, { ...defaultPollPacing, leaseS: 90 });
      expect(await state(id)).to.deep.equal(before);
    }
  });

  describe('while the provider\'s task callbacks arrive, polls are a sparse fallback', () => {
    const pacing = { ...defaultPollPacing, callbackFallbackMinMs: 1000, callbackTrustS: 30, leaseS: 90 };

    it('after 1/3 of the run so far, between callbackFallbackMinMs and maxMs, once a callback freed a slot of any account within callbackTrustS', async () => {
      const { db } = services();
      await calledBack(2, 5);
      const [fresh, ranSix, old] = [await polledTask(0.5), await polledTask(6), await polledTask(3600)];
      for (const id of [fresh, ranSix, old]) await schedulePoll(db, id, pacing);
      expect(await inMs(fresh), 'at least callbackFallbackMinMs').to.be.within(700, 1050);
      expect(await inMs(ranSix), '6 s / 3').to.be.within(1700, 2050);
      expect(await inMs(old), 'capped at maxMs').to.be.within(4700, 5050);
    });

    it('polls densely again when the last callback is older than callbackTrustS', async () => {
      const { db } = services();
      await calledBack(1, 31);
      await calledBack(2, 70);
      const id = await polledTask(3);
      await schedulePoll(db, id, pacing);
      expect(await inMs(id), '3 s / 15').to.be.within(0, 250);
    });

    it('never polls sooner than polling alone would: minMs above callbackFallbackMinMs holds', async () => {
      const { db } = services();
      await calledBack(2, 5);
      const id = await polledTask(0.5);
      await schedulePoll(db, id, { ...pacing, minMs: 3000, callbackFallbackMinMs: 1000 });
      expect(await inMs(id)).to.be.within(2700, 3050);
    });

    it('never trusts them with callbackTrustS 0', async () => {
      const { db } = services();
      await calledBack(1, 0);
      const id = await polledTask(3);
      await schedulePoll(db, id, { ...pacing, callbackTrustS: 0 });
      expect(await inMs(id)).to.be.within(0, 250);
    });

    it('gives a new submission its first poll by the same pacing: callbackFallbackMinMs when trusted, minMs when not', async () => {
      const { db } = services();
      const [account] = await db('provider_accounts').orderBy('id').pluck('id');
      const user = await makeUser();
      const [dense, trusted] = [await insertGeneration(user.id, 'pending'), await insertGeneration(user.id, 'pending')];
      expect(await markProcessing(db, { generationId: dense, accountId: account, taskId: 'task-dense' }, { ...pacing, minMs: 300 })).not.to.equal(null);
      await calledBack(2, 5);
      expect(await markProcessing(db, { generationId: trusted, accountId: account, taskId: 'task-trusted' }, { ...pacing, minMs: 300 })).not.to.equal(null);
      expect(await inMs(trusted)).to.be.within(700, 1050);
      expect(await inMs(dense)).to.be.within(0, 350);
    });
  });
});
