import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { freeLoopbackPort } from '../../../db/postgres';
import { createKnex } from '../../../db/knex';
import { markProcessing } from '../../../db/generations/mark-processing';
import { recordTaskCallback } from '../../../db/generations/record-task-callback';
import { schedulePoll } from '../../../db/generations/schedule-poll';
import { taskCallbackUrl } from '../../../clients/providers/task-callback';
import type { ProviderAdapter } from '../../../clients/providers/adapter';
import { adapterWith, defaultPollPacing, distantPolls, insertDemoEffects, insertGeneration, photo, startPipeline, storedUpload, waitForTerminal, type Pipeline } from '../../generation-fixtures';
import { databaseUrl, resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';
import { overKind } from '../../provider-kind';

describe('provider task callbacks', function () {
  this.timeout(60_000);
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  describe('the callback route', () => {
    let generationId: string;
    let otherId: string;
    let accountId: number;
    const hourS = () => Math.ceil(Date.now() / 1000) + 3600;
    const signed = (id: string, expiresS = hourS()) => taskCallbackUrl(t.app.url, t.app.services.config.tokenSecret, id, expiresS);
    const call = (url: string, body: unknown = { id: 'task-1', status: 'succeeded' }) =>
      fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    /** Everything a callback may change: the generation's poll and callback mark, and who holds the slots. */
    const state = async () => ({
      generation: await services().db('generations').where({ id: generationId }).first('status', 'next_poll_at', 'task_callback_at'),
      slots: await services().db('provider_slots').orderBy('slot_no').select('slot_no', 'generation_id', 'lease_expires_at', 'called_back_at'),
    });

    beforeEach(async () => {
      const { db } = services();
      const user = await makeUser();
      generationId = await insertGeneration(user.id, 'processing');
      otherId = await insertGeneration(user.id, 'pending');
      await db('generations').where({ id: generationId }).update({ provider_task_id: 'task-1', next_poll_at: db.raw("now() + interval '1 hour'") });
      const [account] = await db('provider_accounts').insert({ key_fingerprint: 'fp', label: 'a…z', slots: 2 }).returning('id');
      accountId = account.id;
      await db('provider_slots').insert([
        { account_id: account.id, slot_no: 1, generation_id: generationId, lease_expires_at: db.raw("now() + interval '1 hour'") },
        { account_id: account.id, slot_no: 2, generation_id: null, lease_expires_at: null },
      ]);
    });

    it('changes nothing for a made-up signature, another generation\'s, a changed expiry or an expired one (403)', async () => {
      const before = await state();
      const valid = new URL(signed(generationId));
      const forged = new URL(valid);
      forged.searchParams.set('signature', 'A'.repeat(43));
      const moved = new URL(signed(otherId));
      moved.pathname = valid.pathname;
      const extended = new URL(valid);
      extended.searchParams.set('expires', String(Number(valid.searchParams.get('expires')) + 1));
      const expired = signed(generationId, Math.floor(Date.now() / 1000) - 1);
      const unsigned = new URL(valid);
      unsigned.search = '';
      for (const url of [forged.toString(), moved.toString(), extended.toString(), expired, unsigned.toString()]) {
        const answer = await call(url);
        expect(answer.status, url).to.equal(403);
      }
      expect(await state()).to.deep.equal(before);
    });

    it('commits without waiting for the disk only for itself: the connection\'s next statements wait as before', async () => {
      const oneConnection = createKnex(databaseUrl(), 1);
      try {
        expect(await recordTaskCallback(oneConnection, { generationId, taskId: 'task-1' })).to.equal('recorded');
        expect((await oneConnection.raw('show synchronous_commit')).rows).to.deep.equal([{ synchronous_commit: 'on' }]);
        expect((await state()).slots[0]).to.include({ generation_id: null });
        expect(await recordTaskCallback(oneConnection, { generationId, taskId: 'task-1' })).to.equal('ignored');
        // A submission not recorded yet keeps the callback; a generation that does not exist changes nothing.
        expect(await recordTaskCallback(oneConnection, { generationId: otherId, taskId: 'task-1' })).to.equal('early');
        expect(await recordTaskCallback(oneConnection, { generationId: randomUUID(), taskId: 'task-1' })).to.equal('ignored');
        expect((await oneConnection.raw('show synchronous_commit')).rows).to.deep.equal([{ synchronous_commit: 'on' }]);
      } finally {
        await oneConnection.destroy();
      }
    });

    it('frees the slot, makes the poll due and wakes every worker, once; a replay changes nothing', async () => {
      const woken: unknown[] = [];
      const unsubscribe = await services().listenHub.subscribe('provider_task_done', null, { notify: (payload) => woken.push(payload), resync: () => undefined });
      try {
        const url = signed(generationId);
        expect((await call(url)).status).to.equal(200);
        const after = await state();
        expect(after.slots[0]).to.include({ generation_id: null, lease_expires_at: null });
        // The account's callbacks arrive: its tasks' polls become a sparse fallback (schedule-poll.ts).
        expect(after.slots[0].called_back_at.getTime()).to.be.within(Date.now() - 5000, Date.now());
        expect(after.slots[1].called_back_at, 'the other slot').to.equal(null);
        expect(after.generation.task_callback_at).to.be.an.instanceOf(Date);
        expect(after.generation.next_poll_at.getTime()).to.be.at.most(Date.now());
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(woken).to.deep.equal([{ id: generationId }]);

        // The freed slot goes to the next generation; the same callback again must not take it back.
        await services().db('provider_slots').where({ slot_no: 1 }).update({ generation_id: otherId, lease_expires_at: services().db.raw("now() + interval '1 hour'") });
        const leased = await state();
        expect((await call(url)).status).to.equal(200);
        expect(await state()).to.deep.equal(leased);
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect(woken).to.have.length(1);
      } finally {
        unsubscribe();
      }
    });

    it('leaves a poll under way alone (no second copy of the result), and that poll\'s next one comes after the shortest interval', async () => {
      const { db, processSession } = services();
      const claimUntil = await db('generations').where({ id: generationId }).update({ claimed_by: processSession.id }).returning('next_poll_at');
      expect((await call(signed(generationId))).status).to.equal(200);
      const after = await state();
      expect(after.slots[0]).to.include({ generation_id: null, lease_expires_at: null });
      expect(after.generation.task_callback_at).to.be.an.instanceOf(Date);
      expect(after.generation.next_poll_at).to.deep.equal(claimUntil[0].next_poll_at, 'the claim of the poll under way stays');

      // That poll had heard "running" before the task finished: it makes the next one due soon, not in seconds.
      await db('generations').where({ id: generationId }).update({ started_at: db.raw("now() - interval '10 minutes'") });
      await schedulePoll(db, generationId, { ...defaultPollPacing, leaseS: 90 });
      const { next_poll_at: next, claimed_by: claimedBy } = await db('generations').where({ id: generationId }).first('next_poll_at', 'claimed_by');
      expect(claimedBy).to.equal(null);
      expect(next.getTime() - Date.now()).to.be.below(1000);
      await db('generations').where({ id: otherId }).update({ status: 'processing', started_at: db.raw("now() - interval '10 minutes'") });
      await schedulePoll(db, otherId, { ...defaultPollPacing, leaseS: 90 });
      const other = await db('generations').where({ id: otherId }).first('next_poll_at');
      expect(other.next_poll_at.getTime() - Date.now(), 'without a callback: the growing interval').to.be.above(4000);
    });

    it('changes nothing for another task of the generation, or a task still running (200)', async () => {
      const before = await state();
      expect((await call(signed(generationId), { id: 'task-orphan', status: 'succeeded' })).status).to.equal(200);
      expect((await call(signed(generationId), { id: 'task-1', status: 'running' })).status).to.equal(200);
      expect(await state()).to.deep.equal(before);
    });

    it('keeps a callback that comes before the submission is recorded (200): the record of that task makes its first poll due at once, of another task not', async () => {
      const { db } = services();
      const record = async (id: string, taskId: string) => (await markProcessing(db, { generationId: id, accountId, taskId }, distantPolls)) !== null;
      const before = await state();
      expect((await call(signed(otherId))).status).to.equal(200);
      expect(await state(), 'the slots and the other generation').to.deep.equal(before);
      expect(await db('generations').where({ id: otherId }).first('status', 'early_callback_task_id', 'task_callback_at', 'callback_answer'))
        .to.deep.equal({ status: 'pending', early_callback_task_id: 'task-1', task_callback_at: null, callback_answer: { status: 'succeeded' } });

      expect(await record(otherId, 'task-1')).to.equal(true);
      const recorded = await db('generations').where({ id: otherId }).first('status', 'next_poll_at', 'early_callback_task_id', 'callback_answer');
      expect(recorded).to.deep.include({ status: 'processing', early_callback_task_id: null, callback_answer: { status: 'succeeded' } });
      expect(recorded.next_poll_at.getTime()).to.be.at.most(Date.now());

      // A callback about another task (an orphan of a double submission) brings no poll forward, and its answer is dropped.
      const third = await insertGeneration((await makeUser()).id, 'pending');
      expect((await call(signed(third), { id: 'task-orphan', status: 'succeeded' })).status).to.equal(200);
      expect(await record(third, 'task-3')).to.equal(true);
      const usual = await db('generations').where({ id: third }).first('next_poll_at', 'early_callback_task_id', 'callback_answer');
      expect(usual).to.include({ early_callback_task_id: null, callback_answer: null });
      expect(usual.next_poll_at.getTime() - Date.now()).to.be.above(50_000);
    });

    it('records a callback whose submission\'s record commits while the callback waits for the row: freed slot, poll due, nothing kept', async () => {
      const { db } = services();
      await db('provider_slots').where({ slot_no: 2 }).update({ generation_id: otherId, lease_expires_at: db.raw("now() + interval '1 hour'") });
      const recording = await db.transaction();
      try {
        expect(await markProcessing(recording, { generationId: otherId, accountId, taskId: 'task-1' }, distantPolls)).not.to.equal(null);
        // The callback's statement sees the generation pending and waits for the row the record holds.
        const answered = call(signed(otherId));
        await new Promise((resolve) => setTimeout(resolve, 200));
        await recording.commit();
        expect((await answered).status).to.equal(200);
      } finally {
        if (!recording.isCompleted()) await recording.rollback();
      }
      const called = await db('generations').where({ id: otherId }).first('status', 'task_callback_at', 'next_poll_at', 'early_callback_task_id');
      expect(called).to.include({ status: 'processing', early_callback_task_id: null });
      expect(called.task_callback_at).to.be.an.instanceOf(Date);
      expect(called.next_poll_at.getTime()).to.be.at.most(Date.now());
      expect(await db('provider_slots').where({ slot_no: 2 }).first('generation_id', 'lease_expires_at')).to.deep.equal({ generation_id: null, lease_expires_at: null });
    });

    it('refuses other methods (405); a callback for a generation that does not exist is 200 and changes nothing', async () => {
      const before = await state();
      expect((await fetch(signed(generationId))).status).to.equal(405);
      expect((await call(signed(randomUUID()))).status).to.equal(200);
      expect(await state()).to.deep.equal(before);
    });
  });

  describe(overKind('in the pipeline'), () => {
    let pipeline: Pipeline | null = null;
    afterEach(async () => {
      await pipeline?.stop();
      pipeline = null;
    });

    // The first poll comes 3 s after the submission: only a callback can bring the result sooner.
    const slowPolls = { SLOT_LEASE_S: '10', POLL_MIN_INTERVAL_MS: '3000', POLL_MAX_INTERVAL_MS: '4000' };

    /**
     * One generation, with webhooks to a web app that checks them, or to `deadEnd` where nothing
     * listens; `adapter` as `startPipeline` takes it.
     */
    async function runOne(deadEnd?: string, adapter?: (real: ProviderAdapter) => ProviderAdapter): Promise<{ storedAfterMs: number; calledBack: boolean; polls: number }> {
      pipeline = await startPipeline({ config: { ...slowPolls, ...(deadEnd ? { PROVIDER_CALLBACK_BASE_URL: deadEnd } : {}) }, simulator: { latencyMs: 300 }, callbackApp: !deadEnd, adapter });
      const effects = await insertDemoEffects();
      const user = await makeUser({ guest: true, balance: 100 });
      const upload = await storedUpload(user.id, await photo());
      const answer = await t.api.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[upload]] }, { token: user.token });
      expect(answer.status, answer.text).to.equal(202);
      expect(await waitForTerminal(answer.body.id)).to.deep.equal({ status: 'succeeded', error_code: null });
      const row = await services().db('generations').where({ id: answer.body.id }).first('started_at', 'result_stored_at', 'task_callback_at');
      return { storedAfterMs: row.result_stored_at.getTime() - row.started_at.getTime(), calledBack: row.task_callback_at !== null, polls: pipeline.simulator.stats().polls };
    }

    it('stores the result as soon as the provider calls back, long before the first poll, from what the callback said: the provider is not polled', async () => {
      const { storedAfterMs, calledBack, polls } = await runOne();
      expect(calledBack).to.equal(true);
      expect(storedAfterMs).to.be.below(2500);
      expect(polls).to.equal(0);
    });

    it('asks the provider when the callback names a success without its result (fal\'s payload_error), at once', async () => {
      const withoutResult = (real: ProviderAdapter) => adapterWith(real, { outcomeOfCallback: () => ({ kind: 'succeeded', resultUrl: null }) });
      const { storedAfterMs, calledBack, polls } = await runOne(undefined, withoutResult);
      expect(calledBack).to.equal(true);
      expect(storedAfterMs).to.be.below(2500);
      expect(polls).to.equal(1);
    });

    it('starts no dispatcher round for the callback of a lone generation: no one waits for its freed slot', async () => {
      // Rounds come only when something wakes the dispatcher: its tick is a minute.
      pipeline = await startPipeline({ config: { ...slowPolls, DISPATCH_TICK_MS: '60000' }, simulator: { latencyMs: 300 }, callbackApp: true });
      const effects = await insertDemoEffects();
      const user = await makeUser({ guest: true, balance: 100 });
      const upload = await storedUpload(user.id, await photo());
      let rounds = 0;
      const countRounds = (query: { sql: string }) => {
        if (query.sql.includes('with line as materialized')) rounds += 1;
      };
      services().db.on('query', countRounds);
      try {
        const answer = await t.api.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[upload]] }, { token: user.token });
        expect(await waitForTerminal(answer.body.id)).to.deep.equal({ status: 'succeeded', error_code: null });
        const row = await services().db('generations').where({ id: answer.body.id }).first('task_callback_at');
        expect(row.task_callback_at).not.to.equal(null);
      } finally {
        services().db.off('query', countRounds);
      }
      // The round its creation woke, which submitted it; none after.
      expect(rounds).to.equal(1);
    });

    it('takes a callback faster than the record of the submission at its first call, and stores the result long before the first poll', async () => {
      // At latency 0 the task ends as it is accepted: its callback usually outruns the record.
      pipeline = await startPipeline({ config: slowPolls, simulator: { latencyMs: 0 }, callbackApp: true });
      const effects = await insertDemoEffects();
      const user = await makeUser({ guest: true, balance: 100 });
      const upload = await storedUpload(user.id, await photo());
      const answer = await t.api.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[upload]] }, { token: user.token });
      expect(await waitForTerminal(answer.body.id)).to.deep.equal({ status: 'succeeded', error_code: null });
      const row = await services().db('generations').where({ id: answer.body.id }).first('started_at', 'result_stored_at');
      expect(row.result_stored_at.getTime() - row.started_at.getTime()).to.be.below(2500);
      expect(pipeline.simulator.stats()).to.include({ completed: 1, callbackCalls: 1 });
    });

    it('polls a task only as a fallback once callbacks arrive: 15 polls of a 1.5 s task before the first callback, 1 after', async () => {
      pipeline = await startPipeline({
        config: { SLOT_LEASE_S: '10', POLL_MIN_INTERVAL_MS: '100', POLL_MAX_INTERVAL_MS: '4000', CALLBACK_FALLBACK_POLL_MIN_MS: '1000' },
        simulator: { latencyMs: 1500 },
        callbackApp: true,
      });
      const effects = await insertDemoEffects();
      const user = await makeUser({ guest: true, balance: 100 });
      const upload = await storedUpload(user.id, await photo());
      const pollsOfOne = async () => {
        const before = pipeline!.simulator.stats().polls;
        const answer = await t.api.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[upload]] }, { token: user.token });
        expect(await waitForTerminal(answer.body.id)).to.deep.equal({ status: 'succeeded', error_code: null });
        const row = await services().db('generations').where({ id: answer.body.id }).first('task_callback_at');
        expect(row.task_callback_at, 'called back').to.be.an.instanceOf(Date);
        return pipeline!.simulator.stats().polls - before;
      };
      // Every 100 ms while it runs, then the callback's answer is read instead of the provider.
      expect(await pollsOfOne(), 'no callback seen yet').to.be.within(8, 20);
      // At 1 s ("running"; the next would be 1 s later); the callback's answer is the outcome.
      expect(await pollsOfOne(), 'callbacks arrive').to.be.within(1, 3);
    });

    it('still finishes by polling when the callback never arrives', async () => {
      const { storedAfterMs, calledBack } = await runOne(`http://127.0.0.1:${await freeLoopbackPort()}`);
      expect(calledBack).to.equal(false);
      expect(storedAfterMs).to.be.at.least(2900);
    });
  });
});
