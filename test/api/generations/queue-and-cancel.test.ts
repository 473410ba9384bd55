import { expect } from 'chai';
import { setTimeout as delay } from 'node:timers/promises';
import { markProcessing } from '../../../db/generations/mark-processing';
import { syncProviderAccounts } from '../../../pool/accounts';
import { openSse, type SseConnection } from '../../../scripts/loadtest/sse-client';
import { expectError } from '../../accounts';
import { balanceOf, distantPolls, insertEffect, ledgerOf, photo, registeredPushDevice, startPipeline, statusOf, storedUpload, waitForTerminal, type Pipeline } from '../../generation-fixtures';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, useTestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { jobDataOf } from '../../jobs';

/** The pool's pace is read at most every 2 s per process: wait that long so a test sees its own pool. */
const paceTtlMs = 2100;

describe('queue position and cancel (README, "Queue position" and "Cancel")', function () {
  this.timeout(120_000);
  // The race below sends hundreds of writes and cancels in a minute.
  const unlimited = { burst: '1000000', perMinute: '1000000' };
  const t = useTestApp({ config: { RATE_WRITE_BURST: unlimited.burst, RATE_WRITE_PER_MINUTE: unlimited.perMinute, RATE_READ_BURST: unlimited.burst, RATE_READ_PER_MINUTE: unlimited.perMinute } });
  let user: TestUser;
  let effectId: string;
  beforeEach(async () => {
    await resetDatabase();
    user = await makeUser({ guest: true, balance: 1000 });
    effectId = await insertEffect('winter-portrait');
  });

  async function generation(as: TestUser = user): Promise<string> {
    const upload = await storedUpload(as.id, await photo());
    const answer = await t.api.post('/v1/generations', { effect_id: effectId, characters: [[upload]] }, { token: as.token });
    expect(answer.status, answer.text).to.equal(202);
    return answer.body.id;
  }

  const detail = async (id: string, as: TestUser = user) => (await t.api.get(`/v1/generations/${id}`, { token: as.token })).body;
  const claim = (id: string) => services().db('generations').where({ id }).update({ dispatch_until: services().db.raw("now() + interval '1 minute'") });
  const processing = async (id: string) => (await markProcessing(services().db, { generationId: id, accountId: 1, taskId: `task-${id}` }, distantPolls)) !== null;

  describe('queue_position and estimated_wait_s on GET /v1/generations/{id}', () => {
    it('counts the waiting generations ahead in FIFO order, every user\'s; 1 is the next to be submitted', async () => {
      const other = await makeUser({ guest: true, balance: 100 });
      const ids = [await generation(), await generation(other), await generation()];
      expect((await Promise.all(ids.map((id, index) => detail(id, index === 1 ? other : user)))).map((body) => body.queue_position)).to.deep.equal([1, 2, 3]);
    });

    it('counts only the generations ahead in its own kind\'s line: another kind\'s waiting ones never move it', async () => {
      const app = await startTestApp({ config: { PROVIDER_ACCOUNTS: 'acct-one:2', REPLICATE_ACCOUNTS: 'r8_test-token:2' } });
      try {
        const api = client(app.url);
        const onReplicate = await insertEffect('replicate-portrait', { runs: { replicate: { model: 'owner/portrait' } } });
        const create = async (effect: string) => {
          const upload = await storedUpload(user.id, await photo());
          const answer = await api.post('/v1/generations', { effect_id: effect, characters: [[upload]] }, { token: user.token });
          expect(answer.status, answer.text).to.equal(202);
          return answer.body.id as string;
        };
        const ids = [await create(effectId), await create(onReplicate), await create(effectId), await create(onReplicate), await create(effectId)];
        const positions = async () => (await Promise.all(ids.map(async (id) => (await api.get(`/v1/generations/${id}`, { token: user.token })).body.queue_position)));
        expect(await positions()).to.deep.equal([1, 1, 2, 2, 3]);
        expect((await api.post(`/v1/generations/${ids[1]}/cancel`, undefined, { token: user.token })).status).to.equal(200);
        expect(await positions()).to.deep.equal([1, null, 2, 1, 3]);
      } finally {
        await app.close();
      }
    });

    it('a generation a dispatcher is submitting is 1 with no wait; the ones behind move up; processing and terminal ones show null', async () => {
      const [first, second, third] = [await generation(), await generation(), await generation()];
      await claim(first);
      expect(await detail(first)).to.include({ queue_position: 1, estimated_wait_s: 0 });
      expect((await detail(second)).queue_position).to.equal(1);
      expect((await detail(third)).queue_position).to.equal(2);
      expect(await processing(first)).to.equal(true);
      expect(await detail(first)).to.include({ status: 'processing', queue_position: null, estimated_wait_s: null });
      await t.api.post(`/v1/generations/${second}/cancel`, undefined, { token: user.token });
      expect(await detail(second)).to.include({ status: 'failed', queue_position: null, estimated_wait_s: null });
      expect((await detail(third)).queue_position).to.equal(1);
    });

    it('estimated_wait_s: the first ones in line take the free slots at once; the rest wait for recent completions (per second, across the pool)', async () => {
      const { db } = services();
      await syncProviderAccounts(db, [{ kind: 'simulator', apiKey: 'key-one', slots: 1 }, { kind: 'simulator', apiKey: 'key-two', slots: 1 }]);
      // 30 generations finished in the last five minutes: 0.1 a second.
      await db.raw(`insert into generations (id, user_id, kind, effect_id, status, cost, output_type, model, inputs, error_code, started_at, finished_at)
        select gen_random_uuid(), :user, 'effect', :effect, 'failed', 10, 'image', 'image', '[]', 'provider_error', now() - interval '3 minutes', now() - interval '1 minute'
        from generate_series(1, 30)`, { user: user.id, effect: effectId });
      const ids = [await generation(), await generation(), await generation(), await generation()];
      await delay(paceTtlMs);
      expect((await Promise.all(ids.map((id) => detail(id)))).map((body) => [body.queue_position, body.estimated_wait_s])).to.deep.equal([[1, 0], [2, 0], [3, 10], [4, 20]]);
    });

    it('with too few recent completions to tell, the pace is the slots over the mean run time of the last generations', async () => {
      const { db } = services();
      await syncProviderAccounts(db, [{ kind: 'simulator', apiKey: 'key-one', slots: 2 }]);
      await db('provider_slots').update({ generation_id: null, lease_expires_at: null });
      // Two generations ran 40 s each, long ago: 2 slots / 40 s = 0.05 a second.
      await db.raw(`insert into generations (id, user_id, kind, effect_id, status, cost, output_type, model, inputs, error_code, started_at, finished_at)
        select gen_random_uuid(), :user, 'effect', :effect, 'failed', 10, 'image', 'image', '[]', 'provider_error', now() - interval '2 hours 40 seconds', now() - interval '2 hours'
        from generate_series(1, 2)`, { user: user.id, effect: effectId });
      const ids = [await generation(), await generation(), await generation()];
      await delay(paceTtlMs);
      expect((await Promise.all(ids.map((id) => detail(id)))).map((body) => body.estimated_wait_s)).to.deep.equal([0, 0, 20]);
    });
  });

  describe('POST /v1/generations/{id}/cancel', () => {
    it('a pending generation becomes failed "canceled", refunded once, with its stream event and its push', async () => {
      await registeredPushDevice(user.id);
      const id = await generation();
      expect(await balanceOf(user.id)).to.equal(990);
      const stream: SseConnection = await openSse(t.app.url, `/v1/generations/${id}/stream`, user.token);
      try {
        expect(JSON.parse((await stream.next()).data).status).to.equal('pending');
        const answer = await t.api.post(`/v1/generations/${id}/cancel`, undefined, { token: user.token });
        expect(answer.status, answer.text).to.equal(200);
        expect(answer.body).to.include({ id, status: 'failed', error_code: 'canceled', queue_position: null, estimated_wait_s: null });
        expect(answer.body.finished_at).to.be.a('string');
        expect(JSON.parse((await stream.next()).data)).to.deep.equal({ id, status: 'failed', error_code: 'canceled' });
      } finally {
        stream.destroy();
      }
      expect(await balanceOf(user.id)).to.equal(1000);
      expect(await ledgerOf(user.id)).to.deep.equal([{ kind: 'reserve', amount: -10, reference: id }, { kind: 'refund', amount: 10, reference: id }]);
      expect((await services().boss.getJobById('generation-submit.simulator', id))?.state).to.equal('cancelled');
      expect(await jobDataOf('push-send', { reference: id })).to.deep.equal([{ userId: user.id, kind: 'generation', reference: id, data: { generation_id: id, status: 'failed', error_code: 'canceled' } }]);
    });

    it('any other status is 422 validation_error with one detail on the path id, type invalid_status; nothing refunded', async () => {
      const [running, cancelled] = [await generation(), await generation()];
      await processing(running);
      expect((await t.api.post(`/v1/generations/${cancelled}/cancel`, undefined, { token: user.token })).status).to.equal(200);
      for (const id of [running, cancelled]) {
        const answer = await t.api.post(`/v1/generations/${id}/cancel`, undefined, { token: user.token });
        expectError(answer, 422, 'validation_error');
        expect(answer.body.error.details).to.have.length(1);
        expect(answer.body.error.details[0]).to.include({ type: 'invalid_status' });
        expect(answer.body.error.details[0].loc).to.deep.equal(['path', 'id']);
      }
      expect(await balanceOf(user.id)).to.equal(990);
    });

    it("404 for another's, an absent or a malformed id; 401 without a token", async () => {
      const theirs = await generation(await makeUser({ guest: true, balance: 100 }));
      for (const id of [theirs, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
        expectError(await t.api.post(`/v1/generations/${id}/cancel`, undefined, { token: user.token }), 404, 'not_found');
      }
      expect(await statusOf(services().db, theirs)).to.deep.equal({ status: 'pending', error_code: null });
      expectError(await t.api.post(`/v1/generations/${theirs}/cancel`), 401, 'auth_required');
    });

    it('waits for a dispatcher that holds the generation: cancelled if the submission did not happen', async () => {
      const id = await generation();
      await claim(id);
      const cancelling = t.api.post(`/v1/generations/${id}/cancel`, undefined, { token: user.token });
      await delay(200);
      // The provider was busy: the claim is released and the generation waits again.
      await services().db('generations').where({ id }).update({ dispatch_until: null });
      const answer = await cancelling;
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body.error_code).to.equal('canceled');
    });

    it('...and 422 if it was submitted meanwhile: never both', async () => {
      const id = await generation();
      await claim(id);
      const cancelling = t.api.post(`/v1/generations/${id}/cancel`, undefined, { token: user.token });
      await delay(200);
      expect(await processing(id)).to.equal(true);
      const answer = await cancelling;
      expectError(answer, 422, 'validation_error');
      expect(answer.body.error.details[0].type).to.equal('invalid_status');
      expect(await statusOf(services().db, id)).to.deep.equal({ status: 'processing', error_code: null });
      expect(await balanceOf(user.id)).to.equal(990);
    });
  });

  describe('a cancel racing the dispatcher', () => {
    let pipeline: Pipeline;
    let accepted = 0;
    // After the database is reset for the test: the pipeline syncs its provider accounts (4 slots) at start.
    beforeEach(async () => {
      pipeline = await startPipeline({
        simulator: { latencyMs: 150 },
        adapter: (real) => ({
          submit: async (account, request) => {
            // A submission that takes a few milliseconds, like a real one: the window a cancel can hit.
            await delay(Math.random() * 15);
            const outcome = await real.submit(account, request);
            if (outcome.kind === 'accepted') accepted += 1;
            return outcome;
          },
          poll: (account, taskId) => real.poll(account, taskId),
          fetchResult: (url) => real.fetchResult(url),
          findTask: (account, clientReference) => real.findTask(account, clientReference),
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
});
