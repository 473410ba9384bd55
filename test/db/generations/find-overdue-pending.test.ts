import { expect } from 'chai';
import { failGeneration } from '../../../db/generations/fail-generation';
import { findOverduePending } from '../../../db/generations/find-overdue-pending';
import { insertGeneration } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';
import { makeUser } from '../../users';

describe('findOverduePending: the pending generations that ran out of PENDING_TIMEOUT_S', () => {
  beforeEach(() => resetDatabase());
  const overdue = async () => (await findOverduePending(services().db, 60, 100)).sort((a, b) => a.id.localeCompare(b.id));
  const found = (named: Record<string, boolean>) => Object.entries(named).map(([id, isNamed]) => ({ id, named: isNamed })).sort((a, b) => a.id.localeCompare(b.id));

  it('takes one waiting too long or whose unresolved submission is over, never one being submitted, nor one whose task the provider\'s webhook named until twice the timeout', async () => {
    const { db } = services();
    const user = await makeUser({ guest: true });
    const [waiting, unresolved, submitting, calledBack] = [
      await insertGeneration(user.id), await insertGeneration(user.id), await insertGeneration(user.id), await insertGeneration(user.id),
    ];
    // A fifth, created now: not overdue.
    await insertGeneration(user.id);
    await db('generations').whereIn('id', [waiting, unresolved, submitting, calledBack]).update({ created_at: db.raw("now() - interval '1 hour'") });
    await db('generations').whereIn('id', [unresolved, calledBack]).update({ dispatch_until: db.raw("now() - interval '1 minute'") });
    await db('generations').where({ id: submitting }).update({ dispatch_until: db.raw("now() + interval '1 minute'") });
    // Its task ran at the provider (a fal submission whose answer was lost): the sweeps adopt it, it is not refunded as pool_timeout.
    await db('generations').where({ id: calledBack }).update({ early_callback_task_id: 'task-that-ran', created_at: db.raw("now() - interval '90 seconds'") });
    expect(await overdue()).to.deep.equal(found({ [waiting]: false, [unresolved]: false }));
    // Still pending after twice the timeout: nobody adopted it (no worker holds its account's key), so it ends too.
    await db('generations').where({ id: calledBack }).update({ created_at: db.raw("now() - interval '1 hour'") });
    expect(await overdue()).to.deep.equal(found({ [waiting]: false, [unresolved]: false, [calledBack]: true }));
  });

  it('is not failed by the expiry when a dispatcher claimed it for submission after the expiry found it: its task would run unwatched', async () => {
    const { db, boss } = services();
    const user = await makeUser({ guest: true, balance: 0 });
    const [claimedSince, stillWaiting] = [await insertGeneration(user.id), await insertGeneration(user.id)];
    await db('generations').whereIn('id', [claimedSince, stillWaiting]).update({ created_at: db.raw("now() - interval '1 hour'") });
    expect(await overdue()).to.deep.equal(found({ [claimedSince]: false, [stillWaiting]: false }));
    // The dispatcher's claim commits between the expiry's look and its failure.
    await db('generations').where({ id: claimedSince }).update({ dispatch_until: db.raw("now() + interval '1 minute'") });
    const expire = (generationId: string) => db.transaction((trx) => failGeneration(trx, boss, { generationId, from: 'unclaimed', errorCode: 'pool_timeout' }));
    expect(await expire(claimedSince), 'claimed since: left to its dispatcher').to.equal(false);
    expect(await expire(stillWaiting)).to.equal(true);
    expect(await db('generations').where({ id: claimedSince }).first('status')).to.deep.equal({ status: 'pending' });
    // A claim that ran out (its dispatcher died) no longer keeps it.
    await db('generations').where({ id: claimedSince }).update({ dispatch_until: db.raw("now() - interval '1 second'") });
    expect(await expire(claimedSince)).to.equal(true);
  });

  it('is not failed by the expiry when a webhook named its task after the expiry found it: that task ran, and the sweeps adopt it; at twice the timeout it is', async () => {
    const { db, boss } = services();
    const user = await makeUser({ guest: true, balance: 0 });
    const namedSince = await insertGeneration(user.id);
    await db('generations').where({ id: namedSince }).update({ created_at: db.raw("now() - interval '90 seconds'") });
    expect(await overdue()).to.deep.equal(found({ [namedSince]: false }));
    // The webhook of its task (a fal submission whose answer was lost) is recorded between the expiry's look and its failure.
    await db('generations').where({ id: namedSince }).update({ early_callback_task_id: 'task-that-ran' });
    const expire = (from: 'unclaimed' | 'abandoned') => db.transaction((trx) => failGeneration(trx, boss, { generationId: namedSince, from, errorCode: 'pool_timeout' }));
    expect(await expire('unclaimed'), 'named since: left to the sweeps').to.equal(false);
    expect(await db('generations').where({ id: namedSince }).first('status')).to.deep.equal({ status: 'pending' });
    // Found again at twice the timeout, named: the expiry takes it then.
    await db('generations').where({ id: namedSince }).update({ created_at: db.raw("now() - interval '1 hour'") });
    expect(await overdue()).to.deep.equal(found({ [namedSince]: true }));
    expect(await expire('abandoned')).to.equal(true);
  });
});
