import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import { reserveAndQueue, type GenerationPlan } from '../../../services/generations/reserve-and-queue';
import { ResultTooLargeError, type ProviderAdapter } from '../../../clients/providers/adapter';
import { startPreviewConsumer } from '../../../workers/generations/preview-consumer';
import { adapterWith, balanceOf, insertDemoEffects, insertEffect, ledgerOf, photo, startPipeline, storedUpload, waitForTerminal, type DemoSlug, type Pipeline } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import type { Services } from '../../../services';
import { hugePngHeader } from '../../images';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { jobsOf } from '../../jobs';
import { keyFingerprint } from '../../../pool/accounts';
import { kindKey, kindKeys, kindRoute, overKind, stagedFilesUrl, testKind, unreadablePhotoCode } from '../../provider-kind';

describe(overKind('generation pipeline with the provider simulator'), function () {
  this.timeout(60_000);
  const t = useTestApp();
  let pipeline: Pipeline | null = null;
  let effects: Record<DemoSlug, string>;
  beforeEach(async () => {
    await resetDatabase();
    effects = await insertDemoEffects();
  });
  afterEach(async () => {
    await pipeline?.stop();
    pipeline = null;
  });

  async function launch(slug: DemoSlug, options: { body?: Buffer; user?: TestUser } = {}) {
    const user = options.user ?? await makeUser({ guest: true, balance: 100 });
    const upload = await storedUpload(user.id, options.body ?? await photo());
    const answer = await t.api.post('/v1/generations', { effect_id: effects[slug], characters: [[upload]] }, { token: user.token });
    expect(answer.status, answer.text).to.equal(202);
    return { user, id: answer.body.id as string };
  }

  async function expectRefundedFailure(slug: DemoSlug, errorCode: string, body?: Buffer) {
    const { user, id } = await launch(slug, { body });
    expect(await waitForTerminal(id)).to.deep.equal({ status: 'failed', error_code: errorCode });
    expect(await balanceOf(user.id)).to.equal(100);
    const cost = (await services().db('generations').where({ id }).first('cost')).cost;
    expect(await ledgerOf(user.id)).to.deep.equal([{ kind: 'reserve', amount: -cost, reference: id }, { kind: 'refund', amount: cost, reference: id }]);
    const detail = await t.api.get(`/v1/generations/${id}`, { token: user.token });
    expect(detail.body).to.include({ status: 'failed', error_code: errorCode, result_url: null, preview: null });
    return { user, id };
  }

  const mediaJobs = async () => (await jobsOf('generation-media')).length;

  /** Wraps the simulator's adapter so one call answers as the test says. */
  function misbehaving(change: Partial<ProviderAdapter>): (real: ProviderAdapter) => ProviderAdapter {
    return (real) => adapterWith(real, change);
  }

  describe('results', () => {
    it('takes an image effect from pending to succeeded with a stored result and a preview', async () => {
      pipeline = await startPipeline();
      const { user, id } = await launch('winter-portrait');
      expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      const detail = await t.api.get(`/v1/generations/${id}`, { token: user.token });
      expect(detail.status).to.equal(200);
      expect(detail.body).to.include({ id, status: 'succeeded', output_type: 'image', error_code: null });
      expect(detail.body.effect).to.include({ id: effects['winter-portrait'], slug: 'winter-portrait' });
      expect(new URL(detail.body.result_url).pathname).to.equal(`/media/results/${user.id}/${id}.jpg`);
      expect(new URL(detail.body.result_url).searchParams.get('X-Amz-Expires')).to.equal('3600');
      const result = await fetch(detail.body.result_url);
      expect(result.headers.get('content-type')).to.equal('image/jpeg');
      expect(detail.body.preview).to.include({ width: 64, height: 48, poster: null });
      expect(detail.body.preview.blurhash).to.be.a('string');
      expect(new URL(detail.body.preview.thumb).pathname).to.equal(`/media/previews/${user.id}/${id}.webp`);
      const thumb = Buffer.from(await (await fetch(detail.body.preview.thumb)).arrayBuffer());
      expect((await sharp(thumb).metadata()).format).to.equal('webp');
      for (const field of ['created_at', 'started_at', 'finished_at']) expect(Date.parse(detail.body[field])).to.be.a('number').and.not.NaN;
      expect(await balanceOf(user.id)).to.equal(90);
      expect(await ledgerOf(user.id)).to.deep.equal([{ kind: 'reserve', amount: -10, reference: id }]);
      expect(await services().db('provider_slots').whereNotNull('generation_id').first()).to.equal(undefined, 'the slot went back');
    });

    it('keeps a sticker as a PNG with transparency', async () => {
      pipeline = await startPipeline();
      const { user, id } = await launch('community-sticker');
      expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      const detail = await t.api.get(`/v1/generations/${id}`, { token: user.token });
      expect(new URL(detail.body.result_url).pathname).to.match(/\.png$/);
      const result = await fetch(detail.body.result_url);
      expect(result.headers.get('content-type')).to.equal('image/png');
      const metadata = await sharp(Buffer.from(await result.arrayBuffer())).metadata();
      expect(metadata).to.include({ format: 'png', hasAlpha: true });
    });

    it('stores a video as .mp4 with the poster frame as its preview', async () => {
      pipeline = await startPipeline();
      const { user, id } = await launch('dance-video');
      expect(await waitForTerminal(id, 40_000)).to.deep.equal({ status: 'succeeded', error_code: null });
      const detail = await t.api.get(`/v1/generations/${id}`, { token: user.token });
      expect(detail.body.output_type).to.equal('video');
      expect(new URL(detail.body.result_url).pathname).to.equal(`/media/results/${user.id}/${id}.mp4`);
      expect((await fetch(detail.body.result_url)).headers.get('content-type')).to.equal('video/mp4');
      expect(detail.body.preview.poster).to.equal(detail.body.preview.thumb);
      expect(detail.body.preview.width).to.be.above(0);
      const poster = Buffer.from(await (await fetch(detail.body.preview.thumb)).arrayBuffer());
      expect((await sharp(poster).metadata()).format).to.equal('webp');
      expect(await balanceOf(user.id)).to.equal(60);
    });

    it('makes an image\'s preview in the worker that copied it, in the transaction of its success: no media job, no media process', async () => {
      pipeline = await startPipeline({ media: false });
      const { user, id } = await launch('winter-portrait');
      expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      const row = await services().db('generations').where({ id }).first('preview', 'result_stored_at', 'finished_at');
      expect(row.preview).to.include({ width: 64, height: 48, thumb_key: `previews/${user.id}/${id}.webp`, poster_key: null });
      expect(row.preview.blurhash).to.be.a('string');
      // now() is the transaction's start: the result's record and the success are one commit.
      expect(row.result_stored_at.getTime()).to.equal(row.finished_at.getTime());
      expect(await mediaJobs()).to.equal(0);
    });

    it('leaves a video\'s preview to the media role: the stored result waits in a generation-media job until a media process makes it', async () => {
      pipeline = await startPipeline({ media: false });
      const { user, id } = await launch('dance-video');
      const stored = await eventually(() => services().db('generations').where({ id }).first('status', 'result_stored_at'), (row) => row.result_stored_at !== null, 40_000);
      expect(stored.status).to.equal('processing');
      expect(await mediaJobs()).to.equal(1);
      const consumer = await startPreviewConsumer(pipeline.services);
      try {
        expect(await waitForTerminal(id, 40_000)).to.deep.equal({ status: 'succeeded', error_code: null });
      } finally {
        await consumer.stop();
      }
      expect((await services().db('generations').where({ id }).first('preview')).preview).to.include({ poster_key: `previews/${user.id}/${id}.webp` });
    });

    it('an image whose pixels cannot be read past its header still succeeds, without a preview (the contract)', async () => {
      pipeline = await startPipeline({
        media: false,
        // The provider's file loses its last 8 bytes: its header says JPEG, its pixels end early.
        adapter: (real) => misbehaving({
          fetchResult: async (url) => {
            const result = await real.fetchResult(url);
            return { ...result, body: result.body.subarray(0, result.body.length - 8) };
          },
        })(real),
      });
      const { user, id } = await launch('winter-portrait');
      expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      const detail = await t.api.get(`/v1/generations/${id}`, { token: user.token });
      expect(detail.body.preview).to.equal(null);
      expect(new URL(detail.body.result_url).pathname).to.equal(`/media/results/${user.id}/${id}.jpg`);
      expect(await balanceOf(user.id)).to.equal(90);
    });

    it('wakes on NOTIFY, not on its timers: a generation finishes well within one DISPATCH_TICK_MS of 5 s', async () => {
      pipeline = await startPipeline({ config: { DISPATCH_TICK_MS: '5000' } });
      const started = Date.now();
      const { id } = await launch('winter-portrait');
      await waitForTerminal(id, 4000);
      expect(Date.now() - started).to.be.below(2000);
    });
  });

  describe('every failure is refunded once, with its error_code', () => {
    it('safety: the provider safety filter refused', async () => {
      pipeline = await startPipeline();
      await expectRefundedFailure('qa-safety', 'safety');
    });

    it('provider_error: the provider failed', async () => {
      pipeline = await startPipeline();
      await expectRefundedFailure('qa-provider-error', 'provider_error');
    });

    it('bad_input_image: a broken photo, and a photo above 100 megapixels, fail before the provider is asked', async () => {
      pipeline = await startPipeline();
      await expectRefundedFailure('winter-portrait', 'bad_input_image', Buffer.from('definitely not a jpeg'));
      await expectRefundedFailure('winter-portrait', 'bad_input_image', hugePngHeader());
      expect(pipeline.simulator.stats().submitted).to.equal(0);
    });

    it('a provider error type of its own passes through as error_code', async () => {
      pipeline = await startPipeline({ adapter: misbehaving({ poll: async () => ({ kind: 'failed', errorCode: 'face_not_found', message: null }) }) });
      await expectRefundedFailure('winter-portrait', 'face_not_found');
    });

    it('a refusal at submission fails with its code (no_model)', async () => {
      pipeline = await startPipeline({ adapter: misbehaving({ submit: async () => ({ kind: 'rejected', errorCode: 'no_model', message: 'no such model' }) }) });
      await expectRefundedFailure('winter-portrait', 'no_model');
    });

    it('no_model: the provider has no model of the route\'s name', async () => {
      pipeline = await startPipeline();
      // The demo slug launched here runs a model the provider does not have.
      effects['winter-portrait'] = await insertEffect('qa-no-model', { model: 'nonesuch' });
      await expectRefundedFailure('winter-portrait', 'no_model');
      expect(pipeline.simulator.stats().submitted).to.equal(0);
    });

    it('lost_account: the provider refuses the key of the account the generation went to', async () => {
      // The pool holds acct-two's key; the provider no longer knows it.
      pipeline = await startPipeline({ simulator: { accounts: kindKeys({ 'acct-one': 2 }) } });
      await services().db('provider_accounts').where({ key_fingerprint: keyFingerprint(kindKey('acct-one')) }).update({ cooldown_until: services().db.raw("now() + interval '1 hour'") });
      await expectRefundedFailure('winter-portrait', 'lost_account');
      expect(pipeline.simulator.stats().submitted).to.equal(0);
    });

    it('no_result_url: success reported without a result', async () => {
      pipeline = await startPipeline({ adapter: misbehaving({ poll: async () => ({ kind: 'succeeded', resultUrl: null }) }) });
      await expectRefundedFailure('winter-portrait', 'no_result_url');
    });

    it('no_result_url: an image answered with text where its link should be (only a text task reads text inline)', async () => {
      pipeline = await startPipeline({ adapter: misbehaving({ poll: async () => ({ kind: 'succeeded', resultUrl: null, text: 'a winter portrait' }) }) });
      await expectRefundedFailure('winter-portrait', 'no_result_url');
    });

    it('result_rejected: the result is not a real image', async () => {
      pipeline = await startPipeline({ adapter: misbehaving({ fetchResult: async () => ({ body: Buffer.from('<html>oops</html>'), contentType: 'image/jpeg' }) }) });
      await expectRefundedFailure('winter-portrait', 'result_rejected');
    });

    it('result_rejected: a result file above the size the adapter takes, at once and not tried again', async () => {
      let downloads = 0;
      pipeline = await startPipeline({
        adapter: misbehaving({
          fetchResult: async () => {
            downloads += 1;
            throw new ResultTooLargeError('the answer is larger than 536870912 bytes');
          },
        }),
      });
      await expectRefundedFailure('winter-portrait', 'result_rejected');
      expect(downloads).to.equal(1);
    });

    it('result_rejected: a video effect that returned an image', async () => {
      const still = await photo();
      pipeline = await startPipeline({ adapter: misbehaving({ fetchResult: async () => ({ body: still, contentType: 'video/mp4' }) }) });
      await expectRefundedFailure('dance-video', 'result_rejected');
    });

    it('lost_account: a task on an account whose key no worker has any more', async () => {
      pipeline = await startPipeline({ config: { PENDING_TIMEOUT_S: '60' } });
      await services().db('provider_accounts').update({ cooldown_until: services().db.raw("now() + interval '1 hour'") });
      const { user, id } = await launch('winter-portrait');
      const [gone] = await services().db('provider_accounts').insert({ key_fingerprint: 'removed-key', label: 're…', slots: 1, enabled: false }).returning('id');
      await services().db('generations').where({ id }).update({ status: 'processing', started_at: new Date(), provider_account_id: gone.id, provider_task_id: 'task-9', next_poll_at: new Date() });
      expect(await waitForTerminal(id)).to.deep.equal({ status: 'failed', error_code: 'lost_account' });
      expect(await balanceOf(user.id)).to.equal(100);
    });

    it('pool_timeout: no slot came free within PENDING_TIMEOUT_S', async () => {
      pipeline = await startPipeline({ config: { PENDING_TIMEOUT_S: '1' } });
      await services().db('provider_accounts').update({ cooldown_until: services().db.raw("now() + interval '1 hour'") });
      await expectRefundedFailure('winter-portrait', 'pool_timeout');
    });

    it('provider_timeout: the provider did not finish within PROVIDER_TIMEOUT_S of the submission; its task is cancelled there', async () => {
      pipeline = await startPipeline({ config: { PROVIDER_TIMEOUT_S: '1' }, simulator: { latencyMs: 2500 } });
      const { id } = await expectRefundedFailure('winter-portrait', 'provider_timeout');
      const row = await services().db('generations').where({ id }).first('started_at', 'finished_at');
      expect(row.finished_at - row.started_at).to.be.within(1000, 2500);
      // The simulator's own protocol has no cancel: its tasks end by themselves.
      const cancelled = testKind === 'simulator' ? 0 : 1;
      expect(await eventually(async () => pipeline!.simulator.stats().canceled, (count) => count === cancelled, 2000)).to.equal(cancelled);
    });
  });

  describe('pool behaviour end to end', () => {
    it('backpressure: never more tasks at the provider than slots, no 429, FIFO, and all finish', async () => {
      // All queued before the pipeline starts, so the first round sees the whole line.
      const user = await makeUser({ guest: true, balance: 1000 });
      const ids: string[] = [];
      for (let index = 0; index < 12; index += 1) ids.push((await launch('winter-portrait', { user })).id);
      pipeline = await startPipeline({ simulator: { latencyMs: 300 } });
      const sim = pipeline.simulator;
      let mostRunning = 0;
      const sampler = setInterval(() => {
        mostRunning = Math.max(mostRunning, Object.values(sim.stats().running).reduce((sum, count) => sum + count, 0));
      }, 10);
      try {
        for (const id of ids) expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      } finally {
        clearInterval(sampler);
      }
      expect(mostRunning).to.be.within(1, 4);
      expect(sim.stats().rejectedBusy).to.equal(0);
      const order = await services().db('generations').orderBy('started_at').select('id');
      // Four slots: the first four created are the first four started.
      expect(new Set(order.slice(0, 4).map((row: { id: string }) => row.id))).to.deep.equal(new Set(ids.slice(0, 4)));
    });

    it('a provider 429 puts the account in cooldown and the generation back in line; it still succeeds', async () => {
      // Our pool believes acct-one has 2 slots; the provider allows it 1.
      pipeline = await startPipeline({ simulator: { latencyMs: 300, accounts: kindKeys({ 'acct-one': 1, 'acct-two': 2 }) } });
      const user = await makeUser({ guest: true, balance: 1000 });
      const ids: string[] = [];
      for (let index = 0; index < 6; index += 1) ids.push((await launch('winter-portrait', { user })).id);
      await eventually(async () => pipeline!.simulator.stats().rejectedBusy > 0, Boolean, 10_000);
      const cooled = await services().db('provider_accounts').whereNotNull('cooldown_until').select('label');
      expect(cooled).to.deep.equal([{ label: 'ac…' }]);
      for (const id of ids) expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      expect(await balanceOf(user.id)).to.equal(940);
    });

    it('checks photos ahead of the slot: a broken one fails at once while every slot is busy, good ones are not read twice', async () => {
      pipeline = await startPipeline({ simulator: { latencyMs: 2000 } });
      const user = await makeUser({ guest: true, balance: 1000 });
      const running: string[] = [];
      for (let index = 0; index < 4; index += 1) running.push((await launch('winter-portrait', { user })).id);
      await eventually(async () => (await services().db('generations').where({ status: 'processing' }).count<{ count: number }[]>('* as count'))[0].count === 4, Boolean, 5000);
      const waiting = (await launch('winter-portrait', { user })).id;
      const broken = (await launch('winter-portrait', { user, body: Buffer.from('broken') })).id;
      expect(await waitForTerminal(broken, 1500)).to.deep.equal({ status: 'failed', error_code: 'bad_input_image' });
      expect((await services().db('generations').where({ id: waiting }).first('status', 'inputs_checked_at'))).to.include({ status: 'pending' }).and.to.have.property('inputs_checked_at').that.is.instanceOf(Date);
      for (const id of [...running, waiting]) expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
    });

    /**
     * The pipeline's storage, noting for each read of a photo's header how many times its
     * generation had been claimed when the read began (0: read ahead of its claim).
     */
    function claimsAtEachRead(): { storage: Services['storage']; claims: number[] } {
      const real = services().storage;
      const claims: number[] = [];
      const storage = Object.create(real) as typeof real;
      storage.getHead = async (key: string, length: number) => {
        const { rows } = await services().db.raw<{ rows: { dispatch_attempts: number }[] }>(
          `select dispatch_attempts from generations where inputs @> jsonb_build_array(jsonb_build_object('object_key', ?::text))`,
          [key],
        );
        claims.push(...rows.map((row) => row.dispatch_attempts));
        return real.getHead(key, length);
      };
      return { storage, claims };
    }

    /** A generation's plan of one stored photo, to start it as the replay does: without the API's read of its photo. */
    async function planOfOnePhoto(userId: string): Promise<GenerationPlan> {
      const effect = await services().db('effects').where({ id: effects['winter-portrait'] }).first('cost', 'model', 'output_type');
      const upload = await storedUpload(userId, await photo());
      const { object_key: objectKey } = await services().db('uploads').where({ id: upload }).first('object_key');
      return {
        kind: 'effect', effectId: effects['winter-portrait'], studioCategoryId: null, prompt: null, cost: effect.cost,
        outputType: effect.output_type, model: effect.model, providerKind: testKind, route: kindRoute(effect.model), inputs: [{ upload_id: upload, object_key: objectKey, person: 0 }],
      };
    }

    it('submits a generation whose photos the API read at the request without reading them again', async () => {
      const reads = claimsAtEachRead();
      pipeline = await startPipeline({ services: { storage: reads.storage } });
      const announced: unknown[] = [];
      const unsubscribe = await services().listenHub.subscribe('generation_status', null, {
        notify: (event) => {
          if (event.status === 'pending') announced.push(event.photo_headers_checked);
        },
        resync: () => undefined,
      });
      try {
        const { id } = await launch('winter-portrait');
        expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
        expect(await services().db('generations').where({ id }).first('photo_headers_checked')).to.deep.equal({ photo_headers_checked: true });
        expect(reads.claims, 'no read by the worker').to.deep.equal([]);
        // Its announcement says so: no dispatcher looks for photos to read ahead.
        expect(announced).to.deep.equal([true]);
      } finally {
        unsubscribe();
      }
    });

    it('reads a lone generation\'s photos while the round claims it, not after, when the API did not: the only read of its photo begins before the claim', async () => {
      const reads = claimsAtEachRead();
      pipeline = await startPipeline({ services: { storage: reads.storage } });
      const user = await makeUser({ guest: true, balance: 100 });
      const plan = await planOfOnePhoto(user.id);
      const id = await services().db.transaction(async (trx) => await reserveAndQueue(trx, services(), user.id, plan) as string);
      expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      expect(reads.claims).to.deep.equal([0]);
    });

    it('reads one photo ahead of a burst of new generations committed at once, the others after their claims', async () => {
      const reads = claimsAtEachRead();
      pipeline = await startPipeline({ services: { storage: reads.storage } });
      const user = await makeUser({ guest: true, balance: 1000 });
      const plans = await Promise.all(Array.from({ length: 4 }, () => planOfOnePhoto(user.id)));
      // One commit: their four NOTIFYs arrive together, before any round has seen the line.
      const ids = await services().db.transaction(async (trx) => {
        const created: string[] = [];
        for (const plan of plans) created.push(await reserveAndQueue(trx, services(), user.id, plan) as string);
        return created;
      });
      for (const id of ids) expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      expect(reads.claims.filter((claims) => claims === 0)).to.have.length(1);
      expect(reads.claims).to.have.length(4);
    });

    it('keeps checking photos ahead while every slot stays busy, beyond one round\'s share and without another round', async () => {
      // No round comes by itself (the tick is a minute), so only the checks' own chaining reads all twelve.
      pipeline = await startPipeline({ config: { DISPATCH_TICK_MS: '60000' }, simulator: { latencyMs: 20_000 } });
      const user = await makeUser({ guest: true, balance: 1000 });
      for (let index = 0; index < 4; index += 1) await launch('winter-portrait', { user });
      await eventually(async () => (await services().db('generations').where({ status: 'processing' }).count<{ count: number }[]>('* as count'))[0].count === 4, Boolean, 5000);
      const upload = await storedUpload(user.id, await photo());
      const { object_key: objectKey } = await services().db('uploads').where({ id: upload }).first('object_key');
      const effect = await services().db('effects').where({ id: effects['winter-portrait'] }).first('cost', 'model', 'output_type');
      const plan = {
        kind: 'effect' as const, effectId: effects['winter-portrait'], studioCategoryId: null, prompt: null, cost: effect.cost,
        outputType: effect.output_type, model: effect.model, providerKind: testKind, route: kindRoute(effect.model), inputs: [{ upload_id: upload, object_key: objectKey, person: 0 }],
      };
      // One commit: their NOTIFYs wake the dispatcher for one round or two, not twelve.
      const waiting = await services().db.transaction(async (trx) => {
        const ids: string[] = [];
        for (let index = 0; index < 12; index += 1) ids.push(await reserveAndQueue(trx, services(), user.id, plan) as string);
        return ids;
      });
      const unchecked = () => services().db('generations').whereIn('id', waiting).whereNull('inputs_checked_at').count<{ count: number }[]>('* as count');
      await eventually(async () => (await unchecked())[0].count, (count) => count === 0, 10_000);
      expect(await services().db('generations').whereIn('id', waiting).pluck('status')).to.deep.equal(Array(12).fill('pending'));
    });

    describe('photos staged with the provider ahead of the slot', () => {
      /**
       * Four generations on every slot for 1.5 s, then one more that waits: its row once checked, and
       * the links of each of its submissions. `afterCheck` runs once its photo is checked; it ends as
       * `waitingEnds` (succeeded unless told).
       */
      async function waitBehindBusySlots(options: {
        adapter?: (real: ProviderAdapter) => ProviderAdapter;
        config?: Record<string, string>;
        afterCheck?: (id: string) => Promise<void>;
        waitingEnds?: { status: string; error_code: string | null };
      } = {}) {
        const { adapter, config = {}, afterCheck, waitingEnds = { status: 'succeeded', error_code: null } } = options;
        const sent = new Map<string, string[][]>();
        pipeline = await startPipeline({
          config,
          simulator: { latencyMs: 1500 },
          adapter: (real) => misbehaving({
            submit: (account, request) => {
              sent.set(request.clientReference, [...sent.get(request.clientReference) ?? [], request.inputs.map((input) => input.url)]);
              return real.submit(account, request);
            },
          })(adapter ? adapter(real) : real),
        });
        const user = await makeUser({ guest: true, balance: 1000 });
        const running: string[] = [];
        for (let index = 0; index < 4; index += 1) running.push((await launch('winter-portrait', { user })).id);
        await eventually(async () => sent.size, (count) => count === 4, 5000);
        const waiting = (await launch('winter-portrait', { user })).id;
        await eventually(() => services().db('generations').where({ id: waiting }).first('inputs_checked_at'), (row) => row.inputs_checked_at !== null, 5000);
        const row = await services().db('generations').where({ id: waiting }).first('staged_inputs', 'staged_inputs_until');
        await afterCheck?.(waiting);
        for (const id of running) expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
        expect(await waitForTerminal(waiting)).to.deep.equal(waitingEnds);
        return { id: waiting, user, row, submissions: sent.get(waiting) as string[][], simulatorUrl: pipeline!.simulator.url };
      }

      /** Stages for real, but answers a link of the provider's store to nothing, as after the provider lost its files. */
      const linkToNothing = (real: ProviderAdapter) => misbehaving({
        stageFile: async (account, file) => {
          const staged = await real.stageFile!(account, file);
          return staged.kind === 'staged' ? { ...staged, url: staged.url.replace(/[^/]+$/, randomUUID()) } : staged;
        },
      })(real);

      it('uploads the photos of a waiting generation to the provider\'s file store, and its submission names the provider\'s link', async () => {
        const { row, submissions, simulatorUrl } = await waitBehindBusySlots();
        expect(row.staged_inputs).to.have.length(1);
        expect(row.staged_inputs[0].person).to.equal(0);
        expect(row.staged_inputs[0].url.startsWith(stagedFilesUrl(simulatorUrl))).to.equal(true);
        expect(row.staged_inputs_until.getTime() - Date.now()).to.be.within(55 * 60_000, 60 * 60_000);
        expect(submissions).to.deep.equal([[row.staged_inputs[0].url]]);
        expect(pipeline!.simulator.stats()).to.deep.include({ filesStaged: 1, stagedInputsRead: 1 });
      });

      it('sends our own link when the provider could not stage the photo', async () => {
        const { row, submissions } = await waitBehindBusySlots({
          adapter: (real) => misbehaving({ stageFile: async () => ({ kind: 'unavailable', reason: 'HTTP 503' }) })(real),
        });
        expect(row).to.deep.equal({ staged_inputs: null, staged_inputs_until: null });
        expect(submissions).to.have.length(1);
        expect(new URL(submissions[0][0]).pathname).to.match(/^\/media\/uploads\//);
        expect(pipeline!.simulator.stats()).to.deep.include({ filesStaged: 0, stagedInputsRead: 0 });
      });

      it('stages nothing with PROVIDER_FILE_STORE=0: the provider downloads our link', async () => {
        const { row, submissions } = await waitBehindBusySlots({ config: { PROVIDER_FILE_STORE: '0' } });
        expect(row).to.deep.equal({ staged_inputs: null, staged_inputs_until: null });
        expect(submissions).to.have.length(1);
        expect(new URL(submissions[0][0]).pathname).to.match(/^\/media\/uploads\//);
        expect(pipeline!.simulator.stats()).to.deep.include({ filesStaged: 0, stagedInputsRead: 0 });
      });

      it('sends our own link when the provider keeps the staged photo less than another minute', async () => {
        const { row, submissions } = await waitBehindBusySlots({
          adapter: (real) => misbehaving({
            stageFile: async (account, file) => {
              const staged = await real.stageFile!(account, file);
              return staged.kind === 'staged' ? { ...staged, expiresAt: new Date(Date.now() + 50_000) } : staged;
            },
          })(real),
        });
        expect(row.staged_inputs).to.have.length(1);
        expect(submissions).to.have.length(1);
        expect(submissions[0][0]).to.not.equal(row.staged_inputs[0].url);
        expect(new URL(submissions[0][0]).pathname).to.match(/^\/media\/uploads\//);
      });

      it('submits once more with our own link when the provider no longer has the staged photo, and forgets it', async () => {
        const { id, row, submissions } = await waitBehindBusySlots({ adapter: linkToNothing });
        expect(submissions).to.have.length(2);
        expect(submissions[0]).to.deep.equal([row.staged_inputs[0].url]);
        expect(new URL(submissions[1][0]).pathname).to.match(/^\/media\/uploads\//);
        expect(await services().db('generations').where({ id }).first('staged_inputs', 'staged_inputs_until')).to.deep.equal({ staged_inputs: null, staged_inputs_until: null });
      });

      it('tries our own link only once: when the provider refuses it too, the generation fails as an unreadable photo and is refunded', async () => {
        const { id, user, submissions } = await waitBehindBusySlots({
          adapter: linkToNothing,
          // Gone from our storage after its check: our link leads nowhere either.
          afterCheck: async (waiting) => {
            const { inputs } = await services().db('generations').where({ id: waiting }).first('inputs');
            await services().storage.remove(inputs[0].object_key);
          },
          waitingEnds: { status: 'failed', error_code: unreadablePhotoCode() },
        });
        expect(submissions).to.have.length(2);
        expect(await balanceOf(user.id)).to.equal(1000 - 4 * 10);
        expect((await ledgerOf(user.id)).filter((row) => row.reference === id)).to.deep.equal([
          { kind: 'reserve', amount: -10, reference: id },
          { kind: 'refund', amount: 10, reference: id },
        ]);
      });
    });

    it('reads the photos ahead only after the submissions under way: they never compete with a hand-over', async () => {
      const user = await makeUser({ guest: true, balance: 1000 });
      const ids: string[] = [];
      for (let index = 0; index < 8; index += 1) ids.push((await launch('winter-portrait', { user })).id);
      let submissionsEndedAt = 0;
      // Well under the hand-over wait's 150 ms limit (the submission itself takes longer on a loaded
      // machine), so that the checks wait for the submissions themselves.
      pipeline = await startPipeline({
        simulator: { latencyMs: 5000 },
        adapter: (real) => misbehaving({
          submit: async (account, request) => {
            await new Promise((resolve) => setTimeout(resolve, 50));
            const outcome = await real.submit(account, request);
            submissionsEndedAt = Math.max(submissionsEndedAt, Date.now());
            return outcome;
          },
        })(real),
      });
      const checkedAhead = () => services().db('generations').whereIn('id', ids).where({ status: 'pending' }).whereNotNull('inputs_checked_at').pluck('inputs_checked_at');
      const checked = await eventually(checkedAhead, (times: Date[]) => times.length === 4, 10_000);
      expect(submissionsEndedAt).to.be.above(0);
      for (const time of checked) expect(time.getTime()).to.be.at.least(submissionsEndedAt - 5);
    });

    it('an unreachable provider leaves the generation waiting, not failed', async () => {
      let refusals = 2;
      pipeline = await startPipeline({
        adapter: (real) => ({
          ...misbehaving({})(real),
          submit: async (account, request) => (refusals-- > 0 ? { kind: 'unavailable', reason: 'test', maybeAccepted: false } : real.submit(account, request)),
        }),
      });
      const { id } = await launch('winter-portrait');
      expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
      expect((await services().db('generations').where({ id }).first('dispatch_attempts')).dispatch_attempts).to.equal(3);
    });
  });
});
