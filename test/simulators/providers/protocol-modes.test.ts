import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import sharp from 'sharp';
import type { ProviderAccount, ProviderAdapter, ProviderRequest } from '../../../clients/providers/adapter';
import { FalAdapter } from '../../../clients/providers/fal';
import { checkFalWebhook, FalWebhookKeys } from '../../../clients/providers/fal-webhook';
import { ReplicateAdapter } from '../../../clients/providers/replicate';
import { checkStandardWebhook, ReplicateWebhookSecrets } from '../../../clients/providers/replicate-webhook';
import { taskCallbackUrl } from '../../../clients/providers/task-callback';
import type { ModelRoute, ProviderKind } from '../../../common/model-route';
import { startProviderSimulator, type ProviderSimulator } from '../../../simulators/providers/provider-simulator';
import { startHoldingProxy } from '../../fault-proxies';
import { freePort } from '../../harness';

/** A stand-in for presigned storage links and for our callback route: records what it is sent. */
async function startReceiver(photo: Buffer) {
  const received: { path: string; headers: http.IncomingHttpHeaders; body: Buffer }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => {
      if (req.method === 'GET' && req.url === '/photo.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg' }).end(photo);
      if (req.method === 'GET' && req.url === '/broken.jpg') return res.writeHead(200, { 'content-type': 'image/jpeg' }).end(Buffer.from('not a photo'));
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200).end('OK');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function until<T>(check: () => T | undefined | null | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

interface Mode {
  kind: Exclude<ProviderKind, 'simulator'>;
  adapter(sim: ProviderSimulator, timeoutMs?: number): ProviderAdapter;
  route(model: string): ModelRoute;
  /** Whether the webhook received is signed by the simulated provider (checked as the callback route checks it). */
  signed(sim: ProviderSimulator, delivery: { headers: http.IncomingHttpHeaders; body: Buffer }): Promise<boolean>;
}

const header = (headers: http.IncomingHttpHeaders, name: string) => headers[name] as string | undefined;

const modes: Mode[] = [
  {
    kind: 'replicate',
    adapter: (sim, timeoutMs = 5000) => new ReplicateAdapter({ baseUrl: sim.replicateUrl, callTimeoutMs: timeoutMs }),
    route: (model) => ({ model: `sim/${model}`, input: { image: '{{photo}}', prompt: '{{prompt}}' }, output: '' }),
    signed: async (sim, { headers, body }) => {
      const secrets = new ReplicateWebhookSecrets({ configured: [], baseUrl: sim.replicateUrl, accounts: () => [{ kind: 'replicate', apiKey: 'solo' }], timeoutMs: 2000 });
      return checkStandardWebhook({ id: header(headers, 'webhook-id'), timestamp: header(headers, 'webhook-timestamp'), signature: header(headers, 'webhook-signature') }, body, await secrets.current(), 300) === 'valid';
    },
  },
  {
    kind: 'fal',
    adapter: (sim, timeoutMs = 5000) => new FalAdapter({ queueUrl: sim.falQueueUrl, restUrl: sim.falRestUrl, callTimeoutMs: timeoutMs }),
    route: (model) => ({ model: `sim/${model}/fast`, input: { image_url: '{{photo}}', prompt: '{{prompt}}' }, output: model === 'video' ? 'video.url' : ['ask', 'moderation'].includes(model) ? 'output' : 'images[0].url' }),
    signed: async (sim, { headers, body }) => {
      const keys = await new FalWebhookKeys({ jwksUrl: sim.falJwksUrl, timeoutMs: 2000 }).current();
      const signedHeaders = { requestId: header(headers, 'x-fal-webhook-request-id'), userId: header(headers, 'x-fal-webhook-user-id'), timestamp: header(headers, 'x-fal-webhook-timestamp'), signature: header(headers, 'x-fal-webhook-signature') };
      return checkFalWebhook(signedHeaders, body, keys, 300) === 'valid';
    },
  },
];

for (const mode of modes) {
  describe(`provider simulator in ${mode.kind}'s protocol, through its adapter`, function () {
    this.timeout(30_000);
    const latencyMs = 300;
    const solo: ProviderAccount = { kind: mode.kind, apiKey: 'solo' };
    let sim: ProviderSimulator;
    let adapter: ProviderAdapter;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    const request = (model: string, photo = 'photo.jpg'): ProviderRequest & { generationId: string } => {
      const generationId = randomUUID();
      return {
        generationId,
        route: mode.route(model),
        inputs: [{ url: `${receiver.url}/${photo}`, person: 0 }],
        prompt: 'winter',
        clientReference: generationId,
        callbackUrl: taskCallbackUrl(receiver.url, 's'.repeat(32), generationId, 2_000_000_000, mode.kind),
      };
    };
    const accepted = async (outcome: Promise<unknown>) => {
      const submitted = await outcome as { kind: string; taskId: string };
      expect(submitted.kind, JSON.stringify(submitted)).to.equal('accepted');
      return submitted.taskId;
    };

    before(async () => {
      const photo = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#3366aa' } }).jpeg().toBuffer();
      receiver = await startReceiver(photo);
      sim = await startProviderSimulator({ latencyMs, accounts: { solo: 1, pair: 2 } });
      adapter = mode.adapter(sim);
    });
    after(async () => {
      await sim.stop();
      await receiver.close();
    });

    it('submits, calls back signed as the provider signs, polls to success, and the result downloads', async () => {
      const sent = request('image');
      const taskId = await accepted(adapter.submit(solo, sent));
      expect(await adapter.poll(solo, taskId, sent.route)).to.deep.equal({ kind: 'running' });
      const delivery = await until(() => receiver.received.find((call) => call.path.includes(sent.generationId)));
      expect(await mode.signed(sim, delivery), 'the webhook verifies').to.equal(true);
      const polled = await adapter.poll(solo, taskId, sent.route);
      expect(polled.kind).to.equal('succeeded');
      const result = await adapter.fetchResult((polled as { resultUrl: string }).resultUrl);
      expect(result.contentType).to.equal('image/jpeg');
      expect((await sharp(result.body).metadata()).format).to.equal('jpeg');
    });

    it('answers a text model inline as the provider\'s language models do, with no file to download', async () => {
      const sent = request('ask');
      const taskId = await accepted(adapter.submit(solo, sent));
      await until(() => receiver.received.find((call) => call.path.includes(sent.generationId)));
      expect(await adapter.poll(solo, taskId, sent.route)).to.deep.equal({ kind: 'succeeded', resultUrl: null, text: 'Stylist\'s advice on your 64×48 photo for "winter": wear what you feel at ease in.' });
    });

    it('answers a submission past the account\'s cap as busy, and again accepts once its task ended', async () => {
      const first = request('image');
      await accepted(adapter.submit(solo, first));
      const refused = await adapter.submit(solo, request('image'));
      expect(refused.kind).to.equal('busy');
      expect((refused as { retryAfterS: number }).retryAfterS).to.be.within(1, 2);
      await until(() => receiver.received.find((call) => call.path.includes(first.generationId)));
      await accepted(adapter.submit(solo, request('image')));
      await new Promise((resolve) => setTimeout(resolve, latencyMs + 100));
    });

    it('cancels a running task: its slot is free at once and it ends canceled', async () => {
      const sent = request('image');
      const taskId = await accepted(adapter.submit(solo, sent));
      await adapter.cancel!(solo, taskId, sent.route);
      expect(sim.stats().running).to.not.have.property('solo');
      const polled = await adapter.poll(solo, taskId, sent.route);
      expect(polled.kind).to.equal('failed');
      await accepted(adapter.submit(solo, request('image')));
      await new Promise((resolve) => setTimeout(resolve, latencyMs + 100));
    });

    it('maps every refusal and failure: unknown key, unknown model, a missing photo, an unreadable one, safety, a model error', async () => {
      const stranger = { kind: mode.kind, apiKey: 'stranger' };
      const strangerSim = await startProviderSimulator({ latencyMs: 0, accounts: { known: 1 } });
      try {
        expect(await mode.adapter(strangerSim).submit(stranger, request('image'))).to.deep.include({ kind: 'rejected', errorCode: 'lost_account' });
      } finally {
        await strangerSim.stop();
      }
      const pair = { kind: mode.kind, apiKey: 'pair' };
      expect(await adapter.submit(pair, request('nonesuch'))).to.deep.include({ kind: 'rejected', errorCode: 'no_model' });
      expect(await adapter.submit(pair, { ...request('image'), inputs: [] })).to.deep.include({ kind: 'rejected', errorCode: 'invalid_input' });
      const broken = await adapter.submit(pair, request('image', 'broken.jpg'));
      expect(broken).to.deep.include({ kind: 'rejected', errorCode: mode.kind === 'fal' ? 'bad_input_image' : 'invalid_input' });
      for (const [model, errorCode] of [['safety', 'safety'], ['error', 'provider_error']] as const) {
        const sent = request(model);
        const taskId = await accepted(adapter.submit(pair, sent));
        await until(() => receiver.received.find((call) => call.path.includes(sent.generationId)));
        expect(await adapter.poll(pair, taskId, sent.route)).to.deep.include({ kind: 'failed', errorCode });
      }
    });

    it('answers unavailable that may have been accepted when the provider does not answer in time, surely not accepted when it refuses the connection', async () => {
      expect(await mode.adapter(sim, 1).submit({ kind: mode.kind, apiKey: 'pair' }, request('image'))).to.deep.include({ kind: 'unavailable', maybeAccepted: true });
      const closed = mode.adapter({ ...sim, replicateUrl: `http://127.0.0.1:${await freePort()}/v1`, falQueueUrl: `http://127.0.0.1:${await freePort()}` });
      expect(await closed.submit(solo, request('image'))).to.deep.include({ kind: 'unavailable', maybeAccepted: false });
      await new Promise((resolve) => setTimeout(resolve, latencyMs + 100));
    });

    it('finds a submission whose answer was lost on the way back, or never claims it absent', async () => {
      const proxy = await startHoldingProxy(sim.url, (held) => held.method === 'POST');
      try {
        const pair = { kind: mode.kind, apiKey: 'pair' };
        const lost = request('image');
        const through = mode.adapter({ ...sim, replicateUrl: `${proxy.url}/replicate/v1`, falQueueUrl: `${proxy.url}/fal/queue` }, 1000);
        expect(await through.submit(pair, lost)).to.deep.include({ kind: 'unavailable', maybeAccepted: true });
        const [answer] = proxy.held;
        const created = JSON.parse(answer.body) as { id?: string; request_id?: string };
        const lookup = await adapter.findTask(pair, lost.generationId);
        if (mode.kind === 'replicate') expect(lookup).to.deep.equal({ kind: 'found', taskId: created.id });
        else expect(lookup.kind, `the request ${created.request_id} runs`).to.equal('unknowable');
        await until(() => receiver.received.find((call) => call.path.includes(lost.generationId)));
      } finally {
        await proxy.close();
      }
    });

    it('counts a second task made for one webhook address as a task run twice, on either account; another generation\'s is not', async () => {
      const pair = { kind: mode.kind, apiKey: 'pair' };
      const before = sim.stats().secondTasks;
      const sent = request('image');
      await accepted(adapter.submit(pair, sent));
      await accepted(adapter.submit(pair, request('image')));
      expect(sim.stats().secondTasks, 'two generations, a task each').to.equal(before);
      // The same generation again, its callback link signed anew (another expiry), on the other account.
      await accepted(adapter.submit(solo, { ...sent, callbackUrl: taskCallbackUrl(receiver.url, 's'.repeat(32), sent.generationId, 2_000_000_001, mode.kind) }));
      expect(sim.stats().secondTasks).to.equal(before + 1);
      await new Promise((resolve) => setTimeout(resolve, latencyMs + 100));
    });

    it('stages a photo in its file store, and a task naming the staged link reads it there', async () => {
      const photo = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#aa3366' } }).jpeg().toBuffer();
      const staged = await adapter.stageFile!(solo, { body: photo, contentType: 'image/jpeg' });
      expect(staged.kind).to.equal('staged');
      const before = sim.stats().stagedInputsRead;
      const sent = { ...request('image'), inputs: [{ url: (staged as { url: string }).url, person: 0 }] };
      await accepted(adapter.submit(solo, sent));
      expect(sim.stats().stagedInputsRead).to.equal(before + 1);
      await until(() => receiver.received.find((call) => call.path.includes(sent.generationId)));
    });

    if (mode.kind === 'replicate') {
      it('finds a submission whose answer was lost by its webhook among the account\'s predictions; another reference is absent', async () => {
        const sent = request('image');
        const taskId = await accepted(adapter.submit(solo, sent));
        expect(await adapter.findTask(solo, sent.generationId)).to.deep.equal({ kind: 'found', taskId });
        expect(await adapter.findTask(solo, randomUUID())).to.deep.equal({ kind: 'absent' });
        await until(() => receiver.received.find((call) => call.path.includes(sent.generationId)));
      });
    } else {
      it('never claims a lost submission absent: fal has no lookup', async () => {
        const sent = request('image');
        await accepted(adapter.submit(solo, sent));
        expect((await adapter.findTask(solo, sent.generationId)).kind).to.equal('unknowable');
        await until(() => receiver.received.find((call) => call.path.includes(sent.generationId)));
      });
    }
  });
}
