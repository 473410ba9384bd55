import { generateKeyPairSync, randomUUID, sign } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import sharp from 'sharp';
import type { ProviderAdapter } from '../../../clients/providers/adapter';
import { FalAdapter } from '../../../clients/providers/fal';
import { falSignedMessage } from '../../../clients/providers/fal-webhook';
import { ReplicateAdapter } from '../../../clients/providers/replicate';
import { standardWebhookSignature } from '../../../clients/providers/replicate-webhook';
import { taskCallbackUrl } from '../../../clients/providers/task-callback';
import type { ModelRoute, ProviderKind } from '../../../common/model-route';
import { startProviderSimulator, type ProviderSimulator } from '../../../simulators/providers/provider-simulator';
import { insertGeneration } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';

/**
 * The callback route over Replicate's and fal's own webhooks: our signed URL AND the provider's
 * signature, or nothing changes. Bodies and headers as the providers document them (see
 * test/clients/providers/replicate.test.ts and fal.test.ts for the sources).
 */
describe('provider webhooks at the callback route', function () {
  this.timeout(30_000);
  const replicateSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const falKey = generateKeyPairSync('ed25519');
  const jwks = http.createServer((_request, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [{ ...falKey.publicKey.export({ format: 'jwk' }), kid: 'test' }] }));
  });
  before((done) => {
    jwks.listen(0, '127.0.0.1', done);
  });
  after((done) => {
    jwks.close(() => done());
  });
  const t = useTestApp(() => ({
    config: {
      REPLICATE_WEBHOOK_SECRETS: replicateSecret,
      FAL_JWKS_URL: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
    },
  }));

  let generationId: string;
  let pendingId: string;
  const hourS = () => Math.ceil(Date.now() / 1000) + 3600;
  const signed = (kind: ProviderKind, id = generationId, expiresS = hourS()) => taskCallbackUrl(t.app.url, t.app.services.config.tokenSecret, id, expiresS, kind);
  /** Everything a callback may change. */
  const state = async () => ({
    generations: await services().db('generations').whereIn('id', [generationId, pendingId]).orderBy('id').select('id', 'status', 'next_poll_at', 'task_callback_at', 'early_callback_task_id', 'callback_answer'),
    slots: await services().db('provider_slots').orderBy('slot_no').select('slot_no', 'generation_id', 'lease_expires_at', 'called_back_at'),
  });
  const post = (url: string, body: string, headers: Record<string, string>) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

  beforeEach(async () => {
    await resetDatabase();
    const { db } = services();
    const user = await makeUser();
    generationId = await insertGeneration(user.id, 'processing');
    pendingId = await insertGeneration(user.id, 'pending');
    await db('generations').where({ id: generationId }).update({ provider_task_id: 'task-1', next_poll_at: db.raw("now() + interval '1 hour'") });
    const [account] = await db('provider_accounts').insert({ key_fingerprint: 'fp', label: 'a…z', slots: 2 }).returning('id');
    await db('provider_slots').insert([
      { account_id: account.id, slot_no: 1, generation_id: generationId, lease_expires_at: db.raw("now() + interval '1 hour'") },
      { account_id: account.id, slot_no: 2, generation_id: null, lease_expires_at: null },
    ]);
  });

  const expectRecorded = async () => {
    const after = await state();
    const generation = after.generations.find((row) => row.id === generationId)!;
    expect(generation.task_callback_at).to.be.an.instanceOf(Date);
    expect(generation.next_poll_at.getTime()).to.be.at.most(Date.now());
    expect(after.slots[0]).to.include({ generation_id: null, lease_expires_at: null });
  };

  describe('Replicate', () => {
    const prediction = (fields: Record<string, unknown> = {}) => JSON.stringify({
      id: 'task-1',
      status: 'succeeded',
      output: ['https://replicate.delivery/xezq/out.jpg'],
      error: null,
      webhook: signed('replicate'),
      ...fields,
    });
    const headers = (body: string, { id = `msg_${randomUUID()}`, at = Math.floor(Date.now() / 1000), secret = replicateSecret } = {}) => ({
      'webhook-id': id,
      'webhook-timestamp': String(at),
      'webhook-signature': standardWebhookSignature(secret, id, String(at), body),
    });

    it('records a completed prediction signed with the account\'s secret, once: its replay changes nothing', async () => {
      const body = prediction();
      const signedHeaders = headers(body);
      expect((await post(signed('replicate'), body, signedHeaders)).status).to.equal(200);
      await expectRecorded();
      const recorded = await state();
      expect((await post(signed('replicate'), body, signedHeaders)).status, 'the same webhook-id again').to.equal(200);
      expect(await state()).to.deep.equal(recorded);
    });

    it('keeps what a poll reads of the prediction for the poll it makes due (status, output, error; not its logs or input); one too large to keep only makes the poll due', async () => {
      const answerKept = async () => (await services().db('generations').where({ id: generationId }).first('callback_answer')).callback_answer;
      const body = prediction({ logs: 'step 1\n'.repeat(1000), input: { image: 'https://example.com/photo.jpg' }, metrics: { predict_time: 1.5 } });
      expect((await post(signed('replicate'), body, headers(body))).status).to.equal(200);
      expect(await answerKept()).to.deep.equal({ status: 'succeeded', output: ['https://replicate.delivery/xezq/out.jpg'], error: null });

      await services().db('generations').where({ id: generationId }).update({ task_callback_at: null, callback_answer: null, next_poll_at: services().db.raw("now() + interval '1 hour'") });
      // An answer above 16 KB (an output given inline) is read by the poll from Replicate.
      const inline = prediction({ output: `data:image/png;base64,${'A'.repeat(20_000)}` });
      expect((await post(signed('replicate'), inline, headers(inline))).status).to.equal(200);
      await expectRecorded();
      expect(await answerKept()).to.equal(null);
    });

    it('changes nothing for a forged, expired, unsigned or moved prediction, or one at a URL of another kind (403)', async () => {
      const before = await state();
      const body = prediction();
      const forged = { ...headers(body), 'webhook-signature': standardWebhookSignature('whsec_b3RoZXIgc2VjcmV0', 'msg_1', '1', body) };
      const otherSecret = headers(body, { secret: 'whsec_b3RoZXIgc2VjcmV0' });
      const expired = headers(body, { at: Math.floor(Date.now() / 1000) - 301 });
      const changedBody = prediction({ status: 'failed' });
      // A prediction of the pending generation, posted to this one's URL, and this one's to the pending one's.
      const theirs = prediction({ webhook: signed('replicate', pendingId) });
      const attempts: [string, string, Record<string, string>][] = [
        [signed('replicate'), body, forged],
        [signed('replicate'), body, otherSecret],
        [signed('replicate'), body, expired],
        [signed('replicate'), changedBody, headers(body)],
        [signed('replicate'), body, {}],
        [signed('replicate'), theirs, headers(theirs)],
        [signed('replicate', pendingId), body, headers(body)],
        [signed('simulator').replace('/webhooks/provider/tasks/', '/webhooks/provider/replicate/tasks/'), body, headers(body)],
      ];
      for (const [url, content, sent] of attempts) expect((await post(url, content, sent)).status, `${url} ${JSON.stringify(sent)}`).to.equal(403);
      expect(await state()).to.deep.equal(before);
    });

    it('changes nothing for a prediction still running or another task of the generation (200)', async () => {
      const before = await state();
      for (const body of [prediction({ status: 'processing', output: null }), prediction({ id: 'task-2' })]) {
        expect((await post(signed('replicate'), body, headers(body))).status).to.equal(200);
      }
      expect(await state()).to.deep.equal(before);
    });
  });

  describe('fal', () => {
    const result = (fields: Record<string, unknown> = {}) => JSON.stringify({
      request_id: 'task-1',
      gateway_request_id: 'task-1',
      status: 'OK',
      payload: { images: [{ url: 'https://v3.fal.media/files/out.png', content_type: 'image/png' }] },
      ...fields,
    });
    const headers = (body: string, { requestId = 'task-1', at = Math.floor(Date.now() / 1000), key = falKey.privateKey } = {}) => ({
      'x-fal-webhook-request-id': requestId,
      'x-fal-webhook-user-id': 'github|42',
      'x-fal-webhook-timestamp': String(at),
      'x-fal-webhook-signature': sign(null, falSignedMessage(requestId, 'github|42', String(at), body), key).toString('hex'),
    });

    it('records a finished request signed by a key of fal\'s JWKS, once: its replay changes nothing; an ERROR is finished too', async () => {
      const body = result();
      const signedHeaders = headers(body);
      expect((await post(signed('fal'), body, signedHeaders)).status).to.equal(200);
      await expectRecorded();
      const recorded = await state();
      expect(recorded.generations.find((row) => row.id === generationId)!.callback_answer, 'what a poll reads').to.deep.equal({
        status: 'OK', payload: { images: [{ url: 'https://v3.fal.media/files/out.png', content_type: 'image/png' }] },
      });
      expect((await post(signed('fal'), body, signedHeaders)).status).to.equal(200);
      expect(await state()).to.deep.equal(recorded);
    });

    it('changes nothing for a forged, expired or unsigned call, a body of another request than its signature, or our URL of another kind (403)', async () => {
      const before = await state();
      const body = result();
      const strangerKey = generateKeyPairSync('ed25519').privateKey;
      const other = result({ request_id: 'task-2' });
      const attempts: [string, string, Record<string, string>][] = [
        [signed('fal'), body, headers(body, { key: strangerKey })],
        [signed('fal'), body, headers(body, { at: Math.floor(Date.now() / 1000) - 301 })],
        [signed('fal'), body, { ...headers(body), 'x-fal-webhook-signature': '' }],
        [signed('fal'), other, headers(other)],
        [signed('fal'), result({ status: 'ERROR', error: 'x' }), headers(body)],
        [signed('replicate').replace('/replicate/', '/fal/'), body, headers(body)],
        [signed('fal', generationId, Math.floor(Date.now() / 1000) - 1), body, headers(body)],
      ];
      for (const [url, content, sent] of attempts) expect((await post(url, content, sent)).status, `${url} ${JSON.stringify(sent)}`).to.equal(403);
      expect(await state()).to.deep.equal(before);
    });

    it('changes nothing for another generation\'s request moved to this URL (200: not the task it runs)', async () => {
      const before = await state();
      const theirs = result({ request_id: 'task-of-another', gateway_request_id: 'task-of-another', status: 'ERROR', error: 'Invalid status code: 422', payload: { detail: [] } });
      expect((await post(signed('fal'), theirs, headers(theirs, { requestId: 'task-of-another' }))).status).to.equal(200);
      expect(await state()).to.deep.equal(before);
    });
  });
  describe('from the simulator speaking each protocol', () => {
    let sim: ProviderSimulator;
    const photoServer = http.createServer((_request, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(photoPng));
    let photoPng: Buffer;
    before(async () => {
      photoPng = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#336699' } }).png().toBuffer();
      await new Promise<void>((resolve) => photoServer.listen(0, '127.0.0.1', resolve));
      sim = await startProviderSimulator({ latencyMs: 400, accounts: { 'sim-account': 2 } });
    });
    after(async () => {
      await sim.stop();
      await new Promise<void>((resolve) => photoServer.close(() => resolve()));
    });
    const simApp = useTestApp(() => ({ config: { REPLICATE_WEBHOOK_SECRETS: sim.replicateSecretOf('sim-account'), FAL_JWKS_URL: sim.falJwksUrl } }));

    const cases: [Exclude<ProviderKind, 'simulator'>, () => ProviderAdapter, ModelRoute][] = [
      ['replicate', () => new ReplicateAdapter({ baseUrl: sim.replicateUrl }), { model: 'sim/image', input: { image: '{{photo}}' } }],
      ['fal', () => new FalAdapter({ queueUrl: sim.falQueueUrl, restUrl: sim.falRestUrl }), { model: 'sim/image/dev', input: { image_url: '{{photo}}' }, output: 'images[0].url' }],
    ];
    for (const [kind, adapterOf, route] of cases) {
      it(`records ${kind}'s signed webhook for the task the generation runs`, async () => {
        const callbackUrl = taskCallbackUrl(simApp.app.url, simApp.app.services.config.tokenSecret, generationId, hourS(), kind);
        const photo = `http://127.0.0.1:${(photoServer.address() as AddressInfo).port}/photo.png`;
        const submitted = await adapterOf().submit({ kind, apiKey: 'sim-account' }, { route, inputs: [{ url: photo, person: 0 }], clientReference: generationId, callbackUrl });
        expect(submitted.kind, JSON.stringify(submitted)).to.equal('accepted');
        await services().db('generations').where({ id: generationId }).update({ provider_task_id: (submitted as { taskId: string }).taskId });
        const deadline = Date.now() + 10_000;
        while ((await state()).generations.find((row) => row.id === generationId)!.task_callback_at === null && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        await expectRecorded();
      });
    }
  });
});
