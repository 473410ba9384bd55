import type { Knex } from 'knex';
import { expect } from 'chai';
import pg from 'pg';
import { createGeneration } from '../../../api/generations/create';
import { failGeneration } from '../../../db/generations/fail-generation';
import { markProcessing } from '../../../db/generations/mark-processing';
import { finishSubmitJob } from '../../../db/generations/submit-ticket';
import { submitQueueOf } from '../../../db/queues';
import { markResultStored } from '../../../db/generations/mark-result-stored';
import { rollUpSuccessCounts } from '../../../db/generations/roll-up-success-counts';
import { succeedGeneration } from '../../../db/generations/succeed-generation';
import { succeedWithResult } from '../../../db/generations/succeed-with-result';
import { earningTerms } from '../../../db/user-effects/record-earning';
import { syncProviderAccounts } from '../../../pool/accounts';
import { leaseSlots } from '../../../db/pool/lease-slots';
import { startPreviewConsumer } from '../../../workers/generations/preview-consumer';
import { balanceOf, defaultPollPacing, insertEffect, ledgerOf, photo, registeredPushDevice, storedUpload } from '../../generation-fixtures';
import { databaseUrl, resetDatabase, services } from '../../harness';
import { makeUser, type TestUser } from '../../users';
import { eventually } from '../../../scripts/wait';
import { jobDataOf } from '../../jobs';

/** One slot for one generation, or null when none is free. */
const leaseOne = async (db: Knex, generationId: string, leaseS: number, knownAccounts: string[] | null = null) => (await leaseSlots(db, [generationId], leaseS, knownAccounts))[0] ?? null;

describe('generation state machine', () => {
  let user: TestUser;
  let effectId: string;
  let listener: pg.Client;
  let events: { id: string; user_id: string; status: string; error_code: string | null }[];

  before(async () => {
    listener = new pg.Client({ connectionString: databaseUrl() });
    await listener.connect();
    await listener.query('listen generation_status');
    listener.on('notification', (message) => events.push(JSON.parse(message.payload!)));
  });
  after(() => listener.end());
  beforeEach(async () => {
    await resetDatabase();
    events = [];
    user = await makeUser({ guest: true, balance: 100 });
    effectId = await insertEffect('winter-portrait');
  });

  async function pendingGeneration(): Promise<string> {
    const upload = await storedUpload(user.id, await photo());
    const created = await createGeneration(services(), user.id, { effect_id: effectId, characters: [[upload]] }, null);
    return created.body.id;
  }

  const transaction = <T>(work: (trx: import('knex').Knex.Transaction) => Promise<T>) => services().db.transaction(work);
  const processing = async (id: string) => (await markProcessing(services().db, { generationId: id, accountId: 1, taskId: 'task-1' }, defaultPollPacing)) !== null;
  const failed = (id: string, from: 'pending' | 'processing', errorCode = 'provider_error') => transaction((trx) => failGeneration(trx, services().boss, { generationId: id, from, errorCode }));
  const stored = (id: string) => transaction((trx) => markResultStored(trx, services().boss, { generationId: id, key: `results/${user.id}/${id}.jpg`, contentType: 'image/jpeg' }));
  const succeeded = (id: string) => transaction((trx) => succeedGeneration(trx, services().boss, { generationId: id, preview: null }, earningTerms(services().config)));

  const pushJobs = () => jobDataOf('push-send');

  it('pending -> processing -> succeeded, each step once; duplicates and late steps change nothing', async () => {
    const id = await pendingGeneration();
    expect(await processing(id)).to.equal(true);
    expect(await processing(id)).to.equal(false);
    expect(await succeeded(id)).to.equal(false, 'no success before the result is stored');
    expect(await stored(id)).to.equal(true);
    expect(await stored(id)).to.equal(false);
    expect(await succeeded(id)).to.equal(true);
    expect(await succeeded(id)).to.equal(false);
    expect(await failed(id, 'processing')).to.equal(false, 'a terminal generation never changes again');
    const row = await services().db('generations').where({ id }).first();
    expect(row).to.include({ status: 'succeeded', error_code: null, provider_task_id: 'task-1' });
    expect(row.started_at).to.be.instanceOf(Date);
    expect(row.finished_at).to.be.instanceOf(Date);
    // The success is tallied once, and reaches the effect's count at the next roll-up.
    expect(await services().db('effect_success_tallies').where({ effect_id: effectId }).pluck('effect_id')).to.deep.equal([effectId]);
    expect(await rollUpSuccessCounts(services().db, 100)).to.equal(1);
    expect((await services().db('effects').where({ id: effectId }).first('success_count')).success_count).to.equal(1);
    expect(await ledgerOf(user.id)).to.deep.equal([{ kind: 'reserve', amount: -10, reference: id }]);
  });

  it('succeedWithResult: processing -> succeeded with the result and its preview in one step, once; a result already recorded for the media role is not recorded again', async () => {
    await registeredPushDevice(user.id);
    await syncProviderAccounts(services().db, [{ kind: 'simulator', apiKey: 'k1', slots: 1 }]);
    const preview = { thumb_key: `previews/${user.id}/x/thumb.webp`, poster_key: null, width: 64, height: 48, blurhash: 'LEHV6nWB2yk8pyo0adR*.7kCMdnj' };
    const succeededHere = (id: string) => transaction((trx) => succeedWithResult(trx, services().boss, { generationId: id, preview, key: `results/${user.id}/${id}.jpg`, contentType: 'image/jpeg' }, earningTerms(services().config)));
    const id = await pendingGeneration();
    expect(await leaseOne(services().db, id, 60)).to.not.equal(null);
    expect(await processing(id)).to.equal(true);
    expect(await succeededHere(id)).to.equal(true);
    expect(await succeededHere(id)).to.equal(false);
    const row = await services().db('generations').where({ id }).first('status', 'result_key', 'result_content_type', 'preview', 'result_stored_at', 'finished_at', 'claimed_by', 'next_poll_at');
    expect(row).to.deep.include({ status: 'succeeded', result_key: `results/${user.id}/${id}.jpg`, result_content_type: 'image/jpeg', preview, claimed_by: null, next_poll_at: null });
    expect(row.finished_at.getTime()).to.equal(row.result_stored_at.getTime());
    expect(await services().db('provider_slots').whereNotNull('generation_id').first()).to.equal(undefined, 'the slot went back');
    expect(await services().db('effect_success_tallies').where({ effect_id: effectId }).pluck('effect_id')).to.deep.equal([effectId]);
    expect(await pushJobs()).to.deep.equal([{ userId: user.id, kind: 'generation', reference: id, data: { generation_id: id, status: 'succeeded', error_code: '' } }]);
    await eventually(async () => events.length >= 3, Boolean, 5000);
    expect(events.map((event) => event.status)).to.deep.equal(['pending', 'processing', 'succeeded']);

    const forMedia = await pendingGeneration();
    expect(await processing(forMedia)).to.equal(true);
    expect(await stored(forMedia)).to.equal(true);
    expect(await succeededHere(forMedia)).to.equal(false);
    expect((await services().db('generations').where({ id: forMedia }).first('status')).status).to.equal('processing');
  });

  it('markProcessing answers the ticket for the caller to finish through pg-boss, whatever state it is in; a late call answers nothing', async () => {
    const { db, boss } = services();
    const queue = submitQueueOf('simulator');
    const started = await pendingGeneration();
    expect((await boss.fetch(queue, { batchSize: 1 })).map((job) => job.id)).to.deep.equal([started]);
    const unstarted = await pendingGeneration();
    const mark = (id: string) => markProcessing(db, { generationId: id, accountId: 1, taskId: 'task-1' }, defaultPollPacing);
    const tickets = [await mark(started), await mark(unstarted)];
    expect(tickets.map((ticket) => ticket && { submit_job_id: ticket.submit_job_id, provider_kind: ticket.provider_kind }))
      .to.deep.equal([{ submit_job_id: started, provider_kind: 'simulator' }, { submit_job_id: unstarted, provider_kind: 'simulator' }]);
    for (const ticket of tickets) await finishSubmitJob(boss, null, ticket!.provider_kind, ticket!.submit_job_id!);
    const jobs = [await boss.getJobById(queue, started), await boss.getJobById(queue, unstarted)];
    expect(jobs.map((job) => job?.state)).to.deep.equal(['completed', 'completed']);
    for (const job of jobs) expect(job?.completedOn).to.be.instanceOf(Date);
    expect(await mark(started)).to.equal(null);
  });

  it('failGeneration refunds in the same transaction, exactly once, with the reserve\'s reference', async () => {
    const id = await pendingGeneration();
    expect(await balanceOf(user.id)).to.equal(90);
    expect(await failed(id, 'pending', 'bad_input_image')).to.equal(true);
    expect(await failed(id, 'pending', 'bad_input_image')).to.equal(false);
    expect(await failed(id, 'processing')).to.equal(false);
    expect(await balanceOf(user.id)).to.equal(100);
    expect(await ledgerOf(user.id)).to.deep.equal([{ kind: 'reserve', amount: -10, reference: id }, { kind: 'refund', amount: 10, reference: id }]);
    expect(await services().db('generations').where({ id }).first('status', 'error_code')).to.deep.equal({ status: 'failed', error_code: 'bad_input_image' });
    const job = await services().boss.getJobById('generation-submit.simulator', id);
    expect(job?.state).to.equal('completed');
  });

  it('a failure rolled back refunds nothing and announces nothing', async () => {
    const id = await pendingGeneration();
    await transaction(async (trx) => {
      await failGeneration(trx, services().boss, { generationId: id, from: 'pending', errorCode: 'provider_error' });
      await trx.rollback(new Error('boom'));
    }).catch(() => undefined);
    expect(await balanceOf(user.id)).to.equal(90);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events.map((event) => event.status)).to.deep.equal(['pending']);
  });

  it('failGeneration gives the slot back', async () => {
    await syncProviderAccounts(services().db, [{ kind: 'simulator', apiKey: 'k1', slots: 1 }]);
    const id = await pendingGeneration();
    expect(await leaseOne(services().db, id, 60)).to.not.equal(null);
    expect(await processing(id)).to.equal(true);
    await failed(id, 'processing');
    expect(await services().db('provider_slots').whereNotNull('generation_id').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
  });

  /** One generation through to success, one failed while pending; answers both once their five NOTIFYs arrived. */
  async function succeededAndFailed(): Promise<[string, string]> {
    const first = await pendingGeneration();
    await processing(first);
    await stored(first);
    await succeeded(first);
    const second = await pendingGeneration();
    await failed(second, 'pending', 'safety');
    await eventually(async () => events.length >= 5, Boolean, 5000);
    return [first, second];
  }

  it('announces every status change with NOTIFY generation_status, creation included (which says whether the API read the photos\' headers), and a push job at terminal ones', async () => {
    await registeredPushDevice(user.id);
    const [first, second] = await succeededAndFailed();
    expect(events).to.deep.equal([
      { id: first, user_id: user.id, status: 'pending', error_code: null, photo_headers_checked: true },
      { id: first, user_id: user.id, status: 'processing', error_code: null },
      { id: first, user_id: user.id, status: 'succeeded', error_code: null },
      { id: second, user_id: user.id, status: 'pending', error_code: null, photo_headers_checked: true },
      { id: second, user_id: user.id, status: 'failed', error_code: 'safety' },
    ]);
    expect(await pushJobs()).to.deep.equal([
      { userId: user.id, kind: 'generation', reference: first, data: { generation_id: first, status: 'succeeded', error_code: '' } },
      { userId: user.id, kind: 'generation', reference: second, data: { generation_id: second, status: 'failed', error_code: 'safety' } },
    ]);
  });

  it('a user without a push device gets no push job at terminal statuses (nothing to deliver), the NOTIFYs all the same', async () => {
    await succeededAndFailed();
    expect(events.map((event) => event.status)).to.deep.equal(['pending', 'processing', 'succeeded', 'pending', 'failed']);
    expect(await pushJobs()).to.deep.equal([]);
  });

  it('a push job goes to a user whose device came after the generation started, and none after the device is gone', async () => {
    const first = await pendingGeneration();
    const device = await registeredPushDevice(user.id, 'android');
    await failed(first, 'pending', 'safety');
    const second = await pendingGeneration();
    await services().db('push_devices').where({ id: device }).delete();
    await failed(second, 'pending', 'safety');
    expect(await pushJobs()).to.deep.equal([
      { userId: user.id, kind: 'generation', reference: first, data: { generation_id: first, status: 'failed', error_code: 'safety' } },
    ]);
  });

  it('a preview copy that fails leaves preview null and the generation still succeeds', async () => {
    const id = await pendingGeneration();
    await processing(id);
    await services().storage.put(`results/${user.id}/${id}.jpg`, Buffer.from('not an image at all'), 'image/jpeg');
    const previews = await startPreviewConsumer(services());
    try {
      await stored(id);
      await eventually(async () => (await services().db('generations').where({ id }).first('status')).status === 'succeeded', Boolean, 10_000);
      expect(await services().db('generations').where({ id }).first('status', 'preview')).to.deep.equal({ status: 'succeeded', preview: null });
      // A duplicate job changes nothing and completes.
      const duplicate = await services().boss.send('generation-media', { generationId: id });
      await eventually(async () => (await services().boss.getJobById('generation-media', duplicate!))?.state === 'completed', Boolean, 10_000);
    } finally {
      await previews.stop();
    }
  });
});
