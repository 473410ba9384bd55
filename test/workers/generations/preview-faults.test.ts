import { expect } from 'chai';
import type { PgBoss } from 'pg-boss';
import { createGeneration } from '../../../api/generations/create';
import { startBoss } from '../../../db/boss';
import { markResultStored } from '../../../db/generations/mark-result-stored';
import type { Storage } from '../../../media/storage';
import type { RunningPart } from '../../../services';
import { startPreviewConsumer } from '../../../workers/generations/preview-consumer';
import { finishStuckMedia, retryDeadPreviews } from '../../../workers/generations/sweeps';
import { proxiedDatabase, startHoldingProxy, type HoldingProxy, type ProxiedDatabase } from '../../fault-proxies';
import { insertEffect, insertGeneration, photo, startPipeline, storedUpload, type Pipeline } from '../../generation-fixtures';
import { resetDatabase, serviceEnv, services, silentLogger, testConfig } from '../../harness';
import { kill, spawnService, untilDeadProcessesShow, untilListening, type ServiceChild } from '../../service-processes';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

/** A video generation: its preview is the media role's (an image's is made by the worker that copies it). */
async function oneGeneration(): Promise<string> {
  const user = await makeUser({ guest: true, balance: 100 });
  const effectId = await insertEffect('dance-video');
  const upload = await storedUpload(user.id, await photo());
  return (await createGeneration(services(), user.id, { effect_id: effectId, characters: [[upload]] }, null)).body.id;
}

function outcome(id: string): Promise<{ status: string; preview: object | null }> {
  return services().db('generations').where({ id }).first('status', 'preview');
}

describe('previews under faults', function () {
  this.timeout(90_000);
  let pipeline: Pipeline | null = null;
  beforeEach(async () => {
    await resetDatabase();
    // The provider side only: results get stored, previews are left to the media processes under test.
    pipeline = await startPipeline({ media: false });
  });
  afterEach(async () => {
    await pipeline?.stop();
    pipeline = null;
  });

  describe('a media process killed while it builds a preview', () => {
    let holding: HoldingProxy;
    const children: ServiceChild[] = [];
    before(() => untilDeadProcessesShow());
    afterEach(async () => {
      for (const child of children.splice(0)) await kill(child);
      await holding.close();
    });

    it('another media process takes the job within seconds and the generation succeeds with its preview', async () => {
      // The doomed process reads results through a proxy that never answers: it is stuck mid-preview.
      holding = await startHoldingProxy(serviceEnv().S3_ENDPOINT, (request) => request.method === 'GET' && (request.url ?? '').includes('/results/'));
      const doomed = spawnService(['media'], { S3_ENDPOINT: holding.url });
      children.push(doomed);
      await untilListening(1);
      const id = await oneGeneration();
      await eventually(() => holding.held.length, (count) => count === 1, 20_000);
      await kill(doomed);
      const killedAt = Date.now();
      children.push(spawnService(['media'], {}));
      const done = await eventually(() => outcome(id), (row) => row.status === 'succeeded', 25_000);
      expect(done.preview, 'the preview was made, not given up').to.not.equal(null);
      expect(Date.now() - killedAt).to.be.below(25_000);
    });
  });

  describe('a database outage while a preview is built', () => {
    let database: ProxiedDatabase;
    let proxiedBoss: PgBoss;
    let consumer: RunningPart | null = null;
    beforeEach(async () => {
      database = await proxiedDatabase();
      proxiedBoss = await startBoss(database.url, { supervise: false, schedule: false }, silentLogger());
      proxiedBoss.on('error', () => undefined);
    });
    afterEach(async () => {
      database.proxy.restore();
      await consumer?.stop();
      consumer = null;
      await proxiedBoss.stop({ graceful: false });
      await database.close();
    });

    it('the preview job is retried once the database is back: succeeded with a preview, not ten minutes later without one', async () => {
      const real = services().storage;
      let outages = 1;
      // The first read of the result takes the database away for two seconds, under the preview's feet.
      const storage = Object.assign(Object.create(real) as Storage, {
        get: async (key: string) => {
          if (outages-- > 0) {
            database.proxy.cut();
            setTimeout(() => database.proxy.restore(), 2000);
          }
          return real.get(key);
        },
      });
      consumer = await startPreviewConsumer({ ...services(), db: database.db, boss: proxiedBoss, storage, config: testConfig() });
      const id = await oneGeneration();
      const done = await eventually(() => outcome(id), (row) => row.status === 'succeeded', 20_000);
      expect(done.preview, 'the preview was made').to.not.equal(null);
    });
  });
});

describe('the stuck-preview sweep', () => {
  beforeEach(() => resetDatabase());

  /** A processing generation whose result is stored, with its `generation-media` job, as the poll loop leaves it. */
  async function storedResult(): Promise<{ id: string; jobId: string }> {
    const user = await makeUser({ guest: true, balance: 100 });
    const id = await insertGeneration(user.id, 'processing');
    const { db, boss } = services();
    await db.transaction((trx) => markResultStored(trx, boss, { generationId: id, key: `results/${user.id}/${id}.jpg`, contentType: 'image/jpeg' }));
    const [job] = await boss.findJobs('generation-media', { data: { generationId: id } });
    return { id, jobId: job.id };
  }

  const sweep = (mediaTimeoutS: number) => finishStuckMedia({ ...services(), config: testConfig({ MEDIA_TIMEOUT_S: String(mediaTimeoutS) }) });

  it('does not give up on a preview job that is being retried, even past MEDIA_TIMEOUT_S', async () => {
    const { id, jobId } = await storedResult();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    // A media process took the job and failed it: it waits for its next try.
    await services().boss.fetch('generation-media');
    await services().boss.fail('generation-media', jobId, { message: 'media process failed' });
    expect(await sweep(1)).to.equal(0);
    expect((await outcome(id)).status).to.equal('processing');
  });

  it('gives up at once on a preview job that used all its tries: succeeded without a preview', async () => {
    const { id, jobId } = await storedResult();
    const { boss } = services();
    // Its last try failed.
    await boss.update('generation-media', undefined, { id: jobId, retryLimit: 0 });
    await boss.fail('generation-media', jobId, { message: 'unreadable' });
    expect((await boss.getJobById('generation-media', jobId))?.state).to.equal('failed');
    expect(await sweep(600)).to.equal(1);
    expect(await outcome(id)).to.deep.equal({ status: 'succeeded', preview: null });
  });

  it('gives up on a preview job no media process took within MEDIA_TIMEOUT_S', async () => {
    const { id } = await storedResult();
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(await sweep(1)).to.equal(1);
    expect(await outcome(id)).to.deep.equal({ status: 'succeeded', preview: null });
  });
});

describe('a preview job nobody works on', () => {
  beforeEach(() => resetDatabase());

  it('fetched but silent past its heartbeat (its fetch answer lost, its process gone): failed by the sweep so another media process takes it', async function () {
    this.timeout(30_000);
    const user = await makeUser({ guest: true, balance: 100 });
    const id = await insertGeneration(user.id, 'processing');
    const { db, boss } = services();
    await db.transaction((trx) => markResultStored(trx, boss, { generationId: id, key: `results/${user.id}/${id}.jpg`, contentType: 'image/jpeg' }));
    const [job] = await boss.fetch('generation-media');
    expect(job.heartbeatSeconds).to.equal(10);
    expect(await retryDeadPreviews(services())).to.equal(0);
    // pg-boss's shortest heartbeat is 10 s, and its heartbeat is its own to write: the test waits it out.
    await new Promise((resolve) => setTimeout(resolve, 10_500));
    expect(await retryDeadPreviews(services())).to.equal(1);
    expect((await boss.getJobById('generation-media', job.id))?.state).to.equal('retry');
  });
});
