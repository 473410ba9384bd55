import { expect } from 'chai';
import { setTimeout as delay } from 'node:timers/promises';
import { expectError } from '../../accounts';
import { adapterWith, balanceOf, insertEffect, ledgerOf, photo, startPipeline, storedUpload, waitForTerminal, type Pipeline } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import { overKind } from '../../provider-kind';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';

describe(overKind('a cancel racing the dispatcher'), function () {
  this.timeout(120_000);
  // The race sends hundreds of writes and cancels in a minute.
  const unlimited = { burst: '1000000', perMinute: '1000000' };
  const t = useTestApp({ config: { RATE_WRITE_BURST: unlimited.burst, RATE_WRITE_PER_MINUTE: unlimited.perMinute, RATE_READ_BURST: unlimited.burst, RATE_READ_PER_MINUTE: unlimited.perMinute } });
  let user: TestUser;
  let effectId: string;

  async function generation(): Promise<string> {
    const upload = await storedUpload(user.id, await photo());
    const answer = await t.api.post('/v1/generations', { effect_id: effectId, characters: [[upload]] }, { token: user.token });
    expect(answer.status, answer.text).to.equal(202);
    return answer.body.id;
  }

  let pipeline: Pipeline;
  let accepted = 0;
  // After the database is reset for the test: the pipeline syncs its provider accounts (4 slots) at start.
  beforeEach(async () => {
    await resetDatabase();
    effectId = await insertEffect('winter-portrait');
    pipeline = await startPipeline({
      simulator: { latencyMs: 150 },
      adapter: (real) => adapterWith(real, {
        submit: async (account, request) => {
          // A submission that takes a few milliseconds, like a real one: the window a cancel can hit.
          await delay(Math.random() * 15);
          const outcome = await real.submit(account, request);
          if (outcome.kind === 'accepted') accepted += 1;
          return outcome;
        },
      }),
    });
  });
  afterEach(() => pipeline.stop());

  it('ends one way only, 160 times: cancelled and refunded (never submitted), or submitted and 422; credits conserved every round', async () => {
    const outcomes = { cancelled: 0, submitted: 0 };
    user = await makeUser({ guest: true, balance: 2000 });
    for (let round = 0; round < 20; round += 1) {
      const before = await balanceOf(user.id);
      // Eight at once for four slots: some wait in line, some are being claimed, some already run when their cancel comes.
      const ids = await Promise.all(Array.from({ length: 8 }, () => generation()));
      const answers = await Promise.all(ids.map(async (id) => {
        await delay(Math.random() * 200);
        return t.api.post(`/v1/generations/${id}/cancel`, undefined, { token: user.token });
      }));
      let submitted = 0;
      for (const [index, id] of ids.entries()) {
        const answer = answers[index];
        const ended = await waitForTerminal(id, 20_000);
        const row = await services().db('generations').where({ id }).first('provider_task_id', 'started_at');
        const ledger = (await ledgerOf(user.id)).filter((entry) => entry.reference === id);
        if (answer.status === 200) {
          outcomes.cancelled += 1;
          expect(ended).to.deep.equal({ status: 'failed', error_code: 'canceled' });
          expect(row, 'never sent to the provider').to.deep.equal({ provider_task_id: null, started_at: null });
          expect(ledger).to.deep.equal([{ kind: 'reserve', amount: -10, reference: id }, { kind: 'refund', amount: 10, reference: id }]);
        } else {
          submitted += 1;
          expectError(answer, 422, 'validation_error');
          expect(answer.body.error.details[0].type).to.equal('invalid_status');
          expect(ended).to.deep.equal({ status: 'succeeded', error_code: null });
          expect(row.provider_task_id).to.be.a('string');
          expect(ledger).to.deep.equal([{ kind: 'reserve', amount: -10, reference: id }]);
        }
      }
      outcomes.submitted += submitted;
      expect(await balanceOf(user.id), `round ${round}`).to.equal(before - 10 * submitted);
    }
    // Every submission the provider accepted is a recorded one: none ran for a cancelled generation.
    const recorded = await services().db('generations').whereNotNull('provider_task_id').count<{ count: number }[]>('* as count');
    expect(recorded[0].count).to.equal(accepted);
    expect(recorded[0].count).to.equal(outcomes.submitted);
    await eventually(() => services().db('provider_slots').whereNotNull('generation_id').first(), (slot) => slot === undefined);
    expect(outcomes.cancelled, JSON.stringify(outcomes)).to.be.above(10);
    expect(outcomes.submitted, JSON.stringify(outcomes)).to.be.above(10);
  });
});
