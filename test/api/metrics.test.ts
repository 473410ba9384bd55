import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { openSse } from '../../scripts/loadtest/sse-client';
import { changeStatus, insertGeneration, waitingGenerations } from '../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../harness';
import { sample } from './monitoring/exposition';
import { userEffectIn } from '../user-effect-fixtures';
import { makeUser } from '../users';

describe('GET /metrics', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  it('answers Prometheus text without authentication, outside /v1', async () => {
    const answer = await t.api.get('/metrics');
    expect(answer.status).to.equal(200);
    expect(answer.headers.get('content-type')).to.match(/^text\/plain/);
    for (const name of [
      'http_request_duration_seconds', 'sse_streams_open', 'sse_stream_leases_active', 'queue_jobs_waiting',
      'queue_oldest_job_age_seconds', 'provider_slots_leased', 'generations_finished_total', 'generation_time_to_terminal_seconds',
      'process_resident_memory_bytes',
    ]) expect(answer.text).to.contain(`# TYPE ${name} `);
  });

  it('reports queue depth and the age of the oldest waiting job per queue', async () => {
    const { boss } = services();
    for (let index = 0; index < 3; index += 1) {
      const id = await boss.send('revoke-idp-b', { index });
      await boss.update('revoke-idp-b', undefined, { id: id!, startAfter: new Date(Date.now() - 42_000) });
    }
    await boss.send('revoke-idp-b', { later: true }, { startAfter: 3600 });
    const { text } = await t.api.get('/metrics');
    expect(sample(text, 'queue_jobs_waiting', { queue: 'revoke-idp-b' })).to.equal(3);
    expect(sample(text, 'queue_jobs_deferred', { queue: 'revoke-idp-b' })).to.equal(1);
    expect(sample(text, 'queue_oldest_job_age_seconds', { queue: 'revoke-idp-b' })).to.be.within(42, 60);
    expect(sample(text, 'queue_jobs_waiting', { queue: 'push-send' })).to.equal(0);
  });

  it('reports each provider kind\'s line by its waiting generations, the oldest one\'s age too', async () => {
    const waiting = await waitingGenerations(2);
    await services().db('generations').where({ id: waiting[0] }).update({ created_at: new Date(Date.now() - 30_000) });
    const { text } = await t.api.get('/metrics');
    expect(sample(text, 'queue_jobs_waiting', { queue: 'generation-submit.simulator' })).to.equal(2);
    expect(sample(text, 'queue_oldest_job_age_seconds', { queue: 'generation-submit.simulator' })).to.be.within(30, 45);
    expect(sample(text, 'queue_jobs_waiting', { queue: 'generation-submit.replicate' })).to.equal(0);
  });

  it('reports leased and total slots per provider account, a moderation among the leased', async () => {
    const { db } = services();
    const [account] = await db('provider_accounts').insert({ key_fingerprint: randomUUID(), label: 'sim-a…1', slots: 4 }).returning('id');
    const generations = [await insertGeneration((await makeUser()).id, 'processing'), await insertGeneration((await makeUser()).id, 'processing')];
    const moderated = await userEffectIn((await makeUser()).id, 'processing');
    await db('provider_slots').insert([
      { account_id: account.id, slot_no: 0, generation_id: generations[0], lease_expires_at: new Date(Date.now() + 60_000) },
      { account_id: account.id, slot_no: 1, generation_id: generations[1], lease_expires_at: new Date(Date.now() - 1000) },
      { account_id: account.id, slot_no: 2, generation_id: null, lease_expires_at: null },
      { account_id: account.id, slot_no: 3, user_effect_id: moderated.id, lease_expires_at: new Date(Date.now() + 60_000) },
    ]);
    const { text } = await t.api.get('/metrics');
    // The second lease ran out: that slot is free again; the moderation holds the fourth.
    expect(sample(text, 'provider_slots_leased', { account: 'sim-a…1' })).to.equal(2);
    expect(sample(text, 'provider_slots', { account: 'sim-a…1' })).to.equal(4);
  });

  it('counts generations that became terminal, by status and error code, and their time to terminal', async () => {
    const before = await t.api.get('/metrics');
    const failedBefore = sample(before.text, 'generations_finished_total', { status: 'failed', error_code: 'pool_timeout' }) ?? 0;
    const countBefore = sample(before.text, 'generation_time_to_terminal_seconds_count', { status: 'failed' }) ?? 0;
    const user = await makeUser();
    for (let index = 0; index < 2; index += 1) await changeStatus(await insertGeneration(user.id, 'pending'), 'failed', 'pool_timeout');
    await changeStatus(await insertGeneration(user.id, 'processing'), 'succeeded');
    const { text } = await t.api.get('/metrics');
    expect(sample(text, 'generations_finished_total', { status: 'failed', error_code: 'pool_timeout' })).to.equal(failedBefore + 2);
    expect(sample(text, 'generation_time_to_terminal_seconds_count', { status: 'failed' })).to.equal(countBefore + 2);
    expect(sample(text, 'generations_finished_total', { status: 'succeeded', error_code: '' })).to.be.at.least(1);
    // Counted once, however many scrapes see them.
    const again = await t.api.get('/metrics');
    expect(sample(again.text, 'generations_finished_total', { status: 'failed', error_code: 'pool_timeout' })).to.equal(failedBefore + 2);
  });

  it('reports open streams and stream slots, and request latency by route template', async () => {
    const user = await makeUser();
    const id = await insertGeneration(user.id, 'processing');
    const stream = await openSse(t.app.url, `/v1/generations/${id}/stream`, user.token);
    await stream.next();
    const { text } = await t.api.get('/metrics');
    expect(sample(text, 'sse_streams_open', { kind: 'generation' })).to.be.at.least(1);
    expect(sample(text, 'sse_stream_leases_active')).to.equal(1);
    expect(sample(text, 'http_request_duration_seconds_count', { route: '/v1/generations/{id}/stream', status: '200' })).to.be.at.least(1);
    stream.destroy();
    await t.api.get(`/v1/generations/${randomUUID()}/stream`);
    const later = await t.api.get('/metrics');
    expect(sample(later.text, 'http_request_duration_seconds_count', { route: '/v1/generations/{id}/stream', status: '401' })).to.be.at.least(1);
    expect(later.text).not.to.contain(id);
  });
});
