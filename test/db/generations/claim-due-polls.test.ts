import { expect } from 'chai';
import { claimDuePolls } from '../../../db/generations/claim-due-polls';
import { recordTaskCallback } from '../../../db/generations/record-task-callback';
import { insertGeneration } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';
import { makeUser } from '../../users';

describe('claimDuePolls: the poll loop\'s claim, with when the next task is due', () => {
  beforeEach(() => resetDatabase());

  const claim = (limit: number) => claimDuePolls(services().db, limit, 60, 3600, [], services().processSession.id);
  /** A processing task whose next poll is `inS` seconds from now. */
  async function task(userId: string, inS: number, callbackCame = false): Promise<string> {
    const { db } = services();
    const id = await insertGeneration(userId, 'processing');
    await db('generations').where({ id }).update({
      provider_task_id: `task-${id}`,
      next_poll_at: db.raw('now() + ? * interval \'1 second\'', [inS]),
      task_callback_at: callbackCame ? db.fn.now() : null,
    });
    return id;
  }

  it('claims the oldest due first and answers when the next task it left is due (its own claims excluded)', async () => {
    const user = await makeUser();
    const later = await task(user.id, -1);
    const oldest = await task(user.id, -2, true);
    await task(user.id, 10);
    await insertGeneration(user.id, 'pending');

    const first = await claim(1);
    expect(first.polls.map((poll) => poll.id)).to.deep.equal([oldest]);
    expect(first.polls[0]).to.include({ called_back: true, timed_out: false, provider_task_id: `task-${oldest}` });
    expect(first.nextDueInMs, 'one more is due already').to.be.at.most(0);

    const second = await claim(5);
    expect(second.polls.map((poll) => poll.id)).to.deep.equal([later]);
    expect(second.polls[0]).to.include({ called_back: false });
    expect(second.nextDueInMs).to.be.within(8000, 10_000);

    const third = await claim(5);
    expect(third.polls).to.deep.equal([]);
    expect(third.nextDueInMs, 'the task in 10 s, not the claims that run 60 s').to.be.within(8000, 10_000);
  });

  it('answers null when no task is scheduled, and claims nothing without room', async () => {
    expect(await claim(5)).to.deep.equal({ polls: [], nextDueInMs: null });
    const user = await makeUser();
    await task(user.id, -1);
    expect(await claim(0)).to.deep.equal({ polls: [], nextDueInMs: null });
    expect((await claim(5)).polls).to.have.length(1);
  });

  it('hands the callback\'s answer to the claim that reads it, once: the next claim of the task asks the provider', async () => {
    const { db } = services();
    const user = await makeUser();
    const id = await task(user.id, 30);
    const answer = { status: 'succeeded', result: { url: 'http://127.0.0.1:1/results/out.jpg' } };
    expect(await recordTaskCallback(db, { generationId: id, taskId: `task-${id}`, answer })).to.equal('recorded');

    const [first] = (await claim(5)).polls;
    expect(first).to.include({ id, called_back: true });
    expect(first.callback_answer).to.deep.equal(answer);
    expect((await db('generations').where({ id }).first('callback_answer')).callback_answer, 'taken off the row').to.equal(null);

    await db('generations').where({ id }).update({ next_poll_at: db.fn.now(), claimed_by: null });
    const [again] = (await claim(5)).polls;
    expect(again).to.include({ id, called_back: true, callback_answer: null });
  });

  it('keeps the answer of a callback that comes while a poll is under way for the next claim, and a replay changes it not', async () => {
    const { db } = services();
    const user = await makeUser();
    const id = await task(user.id, -1);
    const [underWay] = (await claim(5)).polls;
    expect(underWay.callback_answer).to.equal(null);
    const answer = { status: 'failed', error: { type: 'model_error', message: 'out of memory' } };
    expect(await recordTaskCallback(db, { generationId: id, taskId: `task-${id}`, answer })).to.equal('recorded');
    expect(await recordTaskCallback(db, { generationId: id, taskId: `task-${id}`, answer: { status: 'succeeded' } })).to.equal('ignored');

    await db('generations').where({ id }).update({ next_poll_at: db.fn.now(), claimed_by: null });
    const [next] = (await claim(5)).polls;
    expect(next.callback_answer).to.deep.equal(answer);
  });
});
