import { expect } from 'chai';
import { createGeneration } from '../../../api/generations/create';
import { HttpProviderAdapter } from '../../../clients/providers/http-client';
import { ProviderAdapters } from '../../../clients/providers/registry';
import type { RunningPart, Services } from '../../../services';
import { startProviderSimulator, type ProviderSimulator } from '../../../simulators/providers/provider-simulator';
import { startGenerationPipeline } from '../../../workers/generations/pipeline';
import { startPreviewConsumer } from '../../../workers/generations/preview-consumer';
import { balanceOf, fastPipeline, insertEffect, photo, storedUpload, waitForTerminal } from '../../generation-fixtures';
import { resetDatabase, services, testConfig, useTestApp } from '../../harness';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

/**
 * The hand-over of a slot the provider's callback freed, with the tick far away (DISPATCH_TICK_MS
 * 5 s) and the first poll late: only the wake-ups can hand a slot on within a tick.
 */
describe('the hand-over of a freed slot', function () {
  this.timeout(60_000);
  const t = useTestApp();
  const tickMs = 5000;
  let simulator: ProviderSimulator | null = null;
  let parts: RunningPart[] = [];

  beforeEach(() => resetDatabase());
  afterEach(async () => {
    for (const part of parts.reverse()) await part.stop();
    parts = [];
    await simulator?.stop();
    simulator = null;
  });

  /** The simulator, `workers` generation pipelines on it (each a dispatcher and a poll loop, as in one worker process each) and one media part. */
  async function start(accounts: Record<string, number>, latencyMs: number, workers: number, overrides: Record<string, string> = {}): Promise<void> {
    simulator = await startProviderSimulator({ latencyMs, accounts });
    const env = {
      ...fastPipeline,
      PROVIDER_ACCOUNTS: Object.entries(accounts).map(([key, slots]) => `${key}:${slots}`).join(','),
      PROVIDER_URL: simulator.url,
      PROVIDER_CALLBACK_BASE_URL: t.app.url,
      DISPATCH_TICK_MS: String(tickMs),
      POLL_MIN_INTERVAL_MS: '3000',
      POLL_MAX_INTERVAL_MS: '4000',
      SLOT_LEASE_S: '10',
      ...overrides,
    };
    const pipelineServices: Services = { ...services(), config: testConfig(env) };
    for (let index = 0; index < workers; index += 1) {
      parts.push(await startGenerationPipeline(pipelineServices, new ProviderAdapters({ simulator: new HttpProviderAdapter({ baseUrl: simulator.url }) })));
    }
    parts.push(await startPreviewConsumer(pipelineServices));
  }

  async function queue(userId: string, count: number): Promise<{ ids: string[]; uploads: string[] }> {
    const effectId = await insertEffect('winter-portrait');
    const ids: string[] = [];
    const uploads: string[] = [];
    for (let index = 0; index < count; index += 1) {
      const upload = await storedUpload(userId, await photo());
      uploads.push(upload);
      ids.push((await createGeneration(services(), userId, { effect_id: effectId, characters: [[upload]] }, null)).body.id);
    }
    return { ids, uploads };
  }

  it('two workers hand every freed slot on at once, never leasing one twice', async () => {
    await start({ 'duo-a': 1, 'duo-b': 1 }, 200, 2);
    const user = await makeUser({ guest: true, balance: 1000 });
    const { ids } = await queue(user.id, 8);
    for (const id of ids) expect(await waitForTerminal(id, 30_000)).to.deep.equal({ status: 'succeeded', error_code: null });

    const stats = simulator!.stats();
    expect(stats, 'no submission beyond an account\'s cap, none sent twice').to.include({ submitted: 8, rejectedBusy: 0, repeatedSubmissions: 0 });
    expect(stats.callbackAnswersMs, 'every callback answered, each timed from its task\'s end').to.have.length(8);
    expect(stats.callbackAnswersMs.every((ms) => ms >= 0 && ms < tickMs)).to.equal(true);
    expect(stats.inputReadsMs, 'the provider\'s own photo read, once per accepted task').to.have.length(8);
    expect(stats.inputReadsMs.every((ms) => ms >= 0 && ms < tickMs)).to.equal(true);
    const { db } = services();
    const rows = await db('generations').whereIn('id', ids).orderBy('started_at').select('started_at', 'task_callback_at', 'dispatch_attempts');
    expect(rows.every((row) => row.task_callback_at !== null && row.dispatch_attempts === 1)).to.equal(true);
    // Four rounds of two slots at 200 ms: one lost wake-up alone would cost a whole tick.
    expect(rows.at(-1).started_at.getTime() - rows[0].started_at.getTime()).to.be.below(tickMs);
    const [{ live }] = await db('provider_slots').whereNotNull('generation_id').count<{ live: number }[]>('* as live');
    expect(live).to.equal(0);
  });

  it('copies each result once when the provider calls back at once (a callback never doubles a poll under way)', async () => {
    // Polls as often as callbacks: they meet.
    await start({ 'zero-a': 4 }, 0, 1, { POLL_MIN_INTERVAL_MS: '20', POLL_MAX_INTERVAL_MS: '200' });
    const user = await makeUser({ guest: true, balance: 1000 });
    const { ids } = await queue(user.id, 12);
    for (const id of ids) expect(await waitForTerminal(id, 30_000)).to.deep.equal({ status: 'succeeded', error_code: null });
    expect(simulator!.stats()).to.include({ submitted: 12, resultsServed: 12 });
  });

  it('a freed slot whose next generation\'s photo is gone fails that one (refunded) and goes on to the one after', async () => {
    // Our links, not copies staged with the provider: a photo gone from our storage is gone for it too.
    await start({ solo: 1 }, 1500, 1, { PROVIDER_FILE_STORE: '0' });
    const user = await makeUser({ guest: true, balance: 100 });
    const { ids: [running, broken, next], uploads } = await queue(user.id, 3);
    const { db, storage } = services();
    // Checked ahead while the slot is busy, then gone before its turn: the hand-over submits it with
    // a link to nothing, and the provider refuses the photo.
    await eventually(() => db('generations').where({ id: broken }).first('inputs_checked_at', 'status'), (row) => row.inputs_checked_at !== null, 10_000);
    const { object_key: objectKey } = await db('uploads').where({ id: uploads[1] }).first('object_key');
    await storage.remove(objectKey);
    expect(await db('generations').where({ id: running }).first('status')).to.deep.equal({ status: 'processing' });

    expect(await waitForTerminal(running, 30_000)).to.deep.equal({ status: 'succeeded', error_code: null });
    expect(await waitForTerminal(broken, 30_000)).to.deep.equal({ status: 'failed', error_code: 'bad_input_image' });
    expect(await waitForTerminal(next, 30_000)).to.deep.equal({ status: 'succeeded', error_code: null });
    expect(await balanceOf(user.id)).to.equal(100 - 2 * 10);

    const [failed, following] = await Promise.all([db('generations').where({ id: broken }).first('finished_at'), db('generations').where({ id: next }).first('started_at')]);
    expect(following.started_at.getTime() - failed.finished_at.getTime(), 'the failed submission gave its slot on at once').to.be.below(tickMs);
    const [{ live }] = await db('provider_slots').whereNotNull('generation_id').count<{ live: number }[]>('* as live');
    expect(live).to.equal(0);
  });
});
