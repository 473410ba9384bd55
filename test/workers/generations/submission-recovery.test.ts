import { expect } from 'chai';
import type { Knex } from 'knex';
import { createGeneration } from '../../../api/generations/create';
import type { ProviderAdapter } from '../../../clients/providers/adapter';
import { recordTaskCallback } from '../../../db/generations/record-task-callback';
import type { RunningPart } from '../../../services';
import { startProviderSimulator, type ProviderSimulator } from '../../../simulators/providers/provider-simulator';
import { startPreviewConsumer } from '../../../workers/generations/preview-consumer';
import { proxiedDatabase, startHoldingProxy, type HoldingProxy, type ProxiedDatabase } from '../../fault-proxies';
import { adapterWith, insertEffect, ledgerOf, photo, startPipeline, storedUpload, waitForTerminal, type Pipeline } from '../../generation-fixtures';
import { resetDatabase, services, startTestApp, testConfig, type TestApp } from '../../harness';
import { kill, spawnService, untilDeadProcessesShow, untilListening, type ServiceChild } from '../../service-processes';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { isSubmission, kindAccounts, kindKeys, overKind, simulatorApis, submittedTaskId, testKind } from '../../provider-kind';

/** Settings of these tests: the lease and claims at their defaults, so nothing comes back by running out. */
const defaultLeases = { SLOT_LEASE_S: '60', POLL_CLAIM_S: '30', POLL_MIN_INTERVAL_MS: '50', POLL_MAX_INTERVAL_MS: '200', DISPATCH_TICK_MS: '100' };

async function oneGeneration(): Promise<string> {
  const user = await makeUser({ guest: true, balance: 100 });
  const effectId = await insertEffect('winter-portrait');
  const upload = await storedUpload(user.id, await photo());
  // Created as a web process of the test configuration creates it (its accounts decide the effect's route).
  return (await createGeneration({ ...services(), config: testConfig() }, user.id, { effect_id: effectId, characters: [[upload]] }, null)).body.id;
}

function generation(db: Knex, id: string): Promise<{ status: string; provider_task_id: string | null }> {
  return db('generations').where({ id }).first('status', 'provider_task_id');
}

describe(overKind('a submission whose answer was lost'), function () {
  this.timeout(90_000);
  let simulator: ProviderSimulator | null = null;
  let holding: HoldingProxy | null = null;
  let media: RunningPart | null = null;
  let callbacks: TestApp | null = null;
  const children: ServiceChild[] = [];
  before(() => untilDeadProcessesShow());
  beforeEach(() => resetDatabase());
  afterEach(async () => {
    for (const child of children.splice(0)) await kill(child);
    await media?.stop();
    await callbacks?.close();
    await holding?.close();
    await simulator?.stop();
    media = callbacks = holding = simulator = null;
  });

  it('a worker killed after the provider accepted, before it recorded the task: another worker adopts that task within seconds, nothing is submitted twice', async () => {
    simulator = await startProviderSimulator({ latencyMs: 300, accounts: kindKeys({ 'lost-answer': 2 }) });
    holding = await startHoldingProxy(simulator.url, isSubmission);
    // fal has no lookup: only its webhook, checked by a web app, names the task of an answer lost.
    callbacks = testKind === 'fal' ? await startTestApp({ config: simulatorApis(simulator.url) }) : null;
    const env = { ...defaultLeases, ...kindAccounts({ 'lost-answer': 2 }), ...(callbacks ? { PROVIDER_CALLBACK_BASE_URL: callbacks.url, TOKEN_SECRET: callbacks.services.config.tokenSecret } : {}) };
    const doomed = spawnService(['worker'], { ...env, PROVIDER_URL: holding.url, ...simulatorApis(holding.url) });
    children.push(doomed);
    await untilListening(1);
    media = await startPreviewConsumer(services());

    const id = await oneGeneration();
    await eventually(() => holding!.held.length, (count) => count === 1, 20_000);
    const taskId = submittedTaskId(holding.held[0].body);
    await kill(doomed);
    children.push(spawnService(['worker'], { ...env, PROVIDER_URL: simulator.url, ...simulatorApis(simulator.url) }));

    const adopted = await eventually(() => generation(services().db, id), (row) => row.status !== 'pending', 20_000);
    expect(adopted.provider_task_id).to.equal(taskId);
    expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
    expect(simulator.stats().submitted, 'tasks created at the provider').to.equal(1);
  });

  describe('an answer lost on the way back', () => {
    let pipeline: Pipeline | null = null;
    afterEach(async () => {
      await pipeline?.stop();
      pipeline = null;
    });

    /** A provider whose first answer to a submission never comes back, after it did (or did not) take the task. */
    function losingFirstAnswer(sendIt: boolean) {
      let lost = 1;
      return (real: ProviderAdapter): ProviderAdapter => adapterWith(real, {
        submit: async (account, request) => {
          if (lost-- <= 0) return real.submit(account, request);
          if (sendIt) await real.submit(account, request);
          return { kind: 'unavailable', reason: 'no answer within 15000 ms', maybeAccepted: true };
        },
      });
    }

    const foundBy = testKind === 'fal' ? 'the task its webhook named' : 'it by its client reference';
    it(`the provider took the task: the sweeps find ${foundBy} and the generation runs on it, submitted once`, async () => {
      pipeline = await startPipeline({ config: defaultLeases, adapter: losingFirstAnswer(true), callbackApp: testKind === 'fal' });
      const id = await oneGeneration();
      expect(await waitForTerminal(id, 15_000)).to.deep.equal({ status: 'succeeded', error_code: null });
      expect(pipeline.simulator.stats()).to.deep.include({ submitted: 1, repeatedSubmissions: 0 });
    });

    if (testKind !== 'fal') {
      // fal's own adapter cannot look up: its path is the webhook test above.
      it('a provider that cannot look tasks up: the sweeps wait without counting it against the account, then adopt the task its webhook names; submitted once', async () => {
        let taskId: string | null = null;
        pipeline = await startPipeline({
          config: { ...defaultLeases, PROVIDER_CIRCUIT_FAILURES: '2' },
          adapter: (real) => {
            const losing = losingFirstAnswer(true)(real);
            return {
              ...losing,
              submit: async (account, request) => {
                const outcome = await losing.submit(account, request);
                // The task the lost answer named, as the provider's webhook will name it.
                const found = outcome.kind === 'unavailable' ? await real.findTask(account, request.clientReference) : null;
                if (found?.kind === 'found') taskId = found.taskId;
                return outcome;
              },
              findTask: () => Promise.resolve({ kind: 'unknowable', reason: 'no lookup at this provider' }),
            };
          },
        });
        const id = await oneGeneration();
        await eventually(() => taskId, (found) => found !== null, 10_000);
        // Several sweeps (every 2 s at most) find the submission unresolved and cannot ask.
        await new Promise((resolve) => setTimeout(resolve, 4500));
        expect(await generation(services().db, id)).to.deep.include({ status: 'pending' });
        // The lost answer itself counts once; the lookups it cannot make count nothing (2 would open the circuit).
        const accounts = await services().db('provider_accounts').select('failures', 'circuit_opened_at');
        expect(accounts.every((account: { failures: number; circuit_opened_at: Date | null }) => account.failures <= 1 && account.circuit_opened_at === null), JSON.stringify(accounts)).to.equal(true);
        expect(await recordTaskCallback(services().db, { generationId: id, taskId: taskId! })).to.equal('early');
        expect(await waitForTerminal(id, 15_000)).to.deep.equal({ status: 'succeeded', error_code: null });
        expect((await generation(services().db, id)).provider_task_id).to.equal(taskId);
        expect(pipeline.simulator.stats()).to.deep.include({ submitted: 1, repeatedSubmissions: 0, secondTasks: 0 });
      });
    }

    if (testKind === 'fal') {
      it('the provider never got it: fal has no lookup, so it is never submitted twice; it waits until PENDING_TIMEOUT_S and is refunded', async () => {
        pipeline = await startPipeline({ config: { ...defaultLeases, PENDING_TIMEOUT_S: '3' }, adapter: losingFirstAnswer(false) });
        const id = await oneGeneration();
        expect(await waitForTerminal(id, 15_000)).to.deep.equal({ status: 'failed', error_code: 'pool_timeout' });
        expect(pipeline.simulator.stats()).to.deep.include({ submitted: 0 });
        const { user_id: userId } = await services().db('generations').where({ id }).first('user_id');
        expect(await ledgerOf(userId)).to.deep.equal([{ kind: 'reserve', amount: -10, reference: id }, { kind: 'refund', amount: 10, reference: id }]);
      });
    } else {
      it('the provider never got it: the lookup finds nothing and the generation is submitted again, once', async () => {
        pipeline = await startPipeline({ config: defaultLeases, adapter: losingFirstAnswer(false) });
        const id = await oneGeneration();
        expect(await waitForTerminal(id, 15_000)).to.deep.equal({ status: 'succeeded', error_code: null });
        expect(pipeline.simulator.stats()).to.deep.include({ submitted: 1, repeatedSubmissions: 0 });
        expect((await services().db('generations').where({ id }).first('dispatch_attempts')).dispatch_attempts).to.equal(2);
      });
    }
  });

  describe('a database blip between the answer and its record', () => {
    let database: ProxiedDatabase;
    let pipeline: Pipeline | null = null;
    beforeEach(async () => {
      database = await proxiedDatabase();
    });
    afterEach(async () => {
      await pipeline?.stop();
      pipeline = null;
      await database.close();
    });

    it('the worker records the accepted task once the database is back: no second task, no minute lost', async () => {
      pipeline = await startPipeline({
        config: defaultLeases,
        services: { db: database.db },
        adapter: (real) => adapterWith(real, {
          submit: async (account, request) => {
            const outcome = await real.submit(account, request);
            // The provider accepted; the database goes away for a moment before the worker records it.
            database.proxy.cut();
            setTimeout(() => database.proxy.restore(), 800);
            return outcome;
          },
        }),
      });
      const id = await oneGeneration();
      const started = await eventually(() => generation(services().db, id), (row) => row.status !== 'pending', 15_000);
      expect(started.provider_task_id).to.be.a('string');
      expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      expect(pipeline.simulator.stats().submitted, 'tasks created at the provider').to.equal(1);
    });
  });
});
