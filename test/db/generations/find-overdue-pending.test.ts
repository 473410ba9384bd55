import { expect } from 'chai';
import { findOverduePending } from '../../../db/generations/find-overdue-pending';
import { insertGeneration } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';
import { makeUser } from '../../users';

describe('findOverduePending: the pending generations that ran out of PENDING_TIMEOUT_S', () => {
  beforeEach(() => resetDatabase());

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
    expect((await findOverduePending(db, 60, 100)).sort()).to.deep.equal([waiting, unresolved].sort());
    // Still pending after twice the timeout: nobody adopted it (no worker holds its account's key), so it ends too.
    await db('generations').where({ id: calledBack }).update({ created_at: db.raw("now() - interval '1 hour'") });
    expect((await findOverduePending(db, 60, 100)).sort()).to.deep.equal([waiting, unresolved, calledBack].sort());
  });
});
