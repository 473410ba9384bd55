import { expect } from 'chai';
import { schedulePoll } from '../../../db/generations/schedule-poll';
import { createKnex } from '../../../db/knex';
import { syncProviderAccounts } from '../../../pool/accounts';
import { insertGeneration } from '../../generation-fixtures';
import { databaseUrl, resetDatabase, services } from '../../harness';
import { makeUser } from '../../users';

describe('schedulePoll: the next poll of a running task and its slot\'s lease, in one statement', () => {
  beforeEach(async () => {
    await resetDatabase();
    await syncProviderAccounts(services().db, [{ apiKey: 'a', slots: 4 }]);
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
    return id;
  }

  const state = async (id: string) => ({
    generation: await services().db('generations').where({ id }).first('next_poll_at', 'claimed_by'),
    lease: (await services().db('provider_slots').where({ generation_id: id }).first('lease_expires_at'))?.lease_expires_at as Date | undefined,
  });

  it('ends the claim, schedules the poll after 1/15 of the run so far within its bounds, and keeps the slot another leaseS', async () => {
    const oneConnection = createKnex(databaseUrl(), 1);
    try {
      const young = await polledTask(3);
      const old = await polledTask(3600);
      await schedulePoll(oneConnection, young, { minMs: 100, maxMs: 5000, leaseS: 90 });
      await schedulePoll(oneConnection, old, { minMs: 100, maxMs: 5000, leaseS: 90 });
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
      await schedulePoll(db, id, { minMs: 100, maxMs: 5000, leaseS: 90 });
      expect(await state(id)).to.deep.equal(before);
    }
  });
});
