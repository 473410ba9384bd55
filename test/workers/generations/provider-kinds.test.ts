import { expect } from 'chai';
import type { ProviderAdapter, ProviderRequest } from '../../../clients/providers/adapter';
import type { ProviderKind } from '../../../common/model-route';
import { keyFingerprint } from '../../../pool/accounts';
import { insertEffect, insertGeneration, photo, startPipeline, storedUpload, waitForTerminal, type Pipeline } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';

/** A simulator account and a Replicate one; the simulator stands in for both providers. */
const twoKinds = { PROVIDER_ACCOUNTS: 'sim-key:2', REPLICATE_ACCOUNTS: 'r8_kinds-token:1' };

describe('generations of two provider kinds in one pool', function () {
  this.timeout(60_000);
  const t = useTestApp({ config: twoKinds });
  let pipeline: Pipeline | null = null;
  let user: TestUser;
  let effects: Record<'simulator' | 'replicate', string>;
  /** What each submission went to: the account's kind and the route's model. */
  let submitted: { kind: ProviderKind; apiKey: string; model: string; generationId: string }[];

  beforeEach(async () => {
    await resetDatabase();
    user = await makeUser({ guest: true, balance: 1000 });
    effects = {
      simulator: await insertEffect('on-the-simulator'),
      replicate: await insertEffect('on-replicate', { runs: { replicate: { model: 'image', input: { image: '{{photo}}' }, output: '' } } }),
    };
    submitted = [];
  });
  afterEach(async () => {
    await pipeline?.stop();
    pipeline = null;
  });

  const recording = (real: ProviderAdapter): ProviderAdapter => ({
    submit: (account, request: ProviderRequest) => {
      submitted.push({ kind: account.kind, apiKey: account.apiKey, model: request.route.model, generationId: request.clientReference });
      return real.submit(account, request);
    },
    findTask: (account, reference) => real.findTask(account, reference),
    poll: (account, taskId) => real.poll(account, taskId),
    fetchResult: (url) => real.fetchResult(url),
  });

  async function launch(kind: 'simulator' | 'replicate'): Promise<string> {
    const upload = await storedUpload(user.id, await photo());
    const answer = await t.api.post('/v1/generations', { effect_id: effects[kind], characters: [[upload]] }, { token: user.token });
    expect(answer.status, answer.text).to.equal(202);
    return answer.body.id;
  }

  it('submits each generation on an account of its own kind with its route; every replicate slot held never holds the simulator line', async () => {
    pipeline = await startPipeline({ config: twoKinds, adapter: recording });
    const { db } = services();
    // The one replicate slot is held by a long task.
    const holder = await insertGeneration(user.id, 'processing');
    const replicateAccount = (await db('provider_accounts').where({ key_fingerprint: keyFingerprint('r8_kinds-token') }).first('id')).id;
    await db('provider_slots').where({ account_id: replicateAccount }).update({ generation_id: holder, lease_expires_at: db.raw("now() + interval '1 hour'") });

    const onReplicate = [await launch('replicate'), await launch('replicate')];
    const onSimulator = [await launch('simulator'), await launch('simulator'), await launch('simulator')];
    for (const id of onSimulator) expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
    const waiting = await Promise.all(onReplicate.map(async (id) => (await t.api.get(`/v1/generations/${id}`, { token: user.token })).body));
    expect(waiting.map((body) => [body.status, body.queue_position])).to.deep.equal([['pending', 1], ['pending', 2]]);

    await db('provider_slots').where({ account_id: replicateAccount }).update({ generation_id: null, lease_expires_at: null });
    for (const id of onReplicate) expect(await waitForTerminal(id)).to.deep.equal({ status: 'succeeded', error_code: null });
    const of = (ids: string[]) => submitted.filter((submission) => ids.includes(submission.generationId)).map(({ kind, apiKey, model }) => ({ kind, apiKey, model }));
    expect(of(onReplicate)).to.deep.equal(Array(2).fill({ kind: 'replicate', apiKey: 'r8_kinds-token', model: 'image' }));
    expect(of(onSimulator)).to.deep.equal(Array(3).fill({ kind: 'simulator', apiKey: 'sim-key', model: 'image' }));
  });
});
