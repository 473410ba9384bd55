import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { existsSync, readdirSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { ConfigError, loadConfig } from '../../../config';
import { HttpProviderAdapter } from '../../../clients/providers/http-client';
import { startProviderSimulatorFromConfig } from '../../../simulators/providers/from-config';
import { startProviderSimulator, type ProviderSimulator } from '../../../simulators/providers/provider-simulator';
import { pcmWav } from '../../audio';
import { hugePngHeader } from '../../images';

/** A stand-in for presigned storage links: serves the given bytes by path. */
async function startPhotoServer(files: Record<string, Buffer>): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const file = files[req.url ?? ''];
    if (file) res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(file);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

interface ApiAnswer {
  status: number;
  headers: Headers;
  body: { id?: string; status?: string; result?: { url: string; content_type: string } | null; error?: { type: string } | null };
}

async function api(sim: ProviderSimulator, apiKey: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<ApiAnswer> {
  const response = await fetch(`${sim.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as ApiAnswer['body'] };
}

async function finished(sim: ProviderSimulator, apiKey: string, taskId: string): Promise<ApiAnswer['body']> {
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    const { body } = await api(sim, apiKey, 'GET', `/v1/tasks/${taskId}`);
    if (body.status === 'succeeded' || body.status === 'failed') return body;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`task ${taskId} did not finish`);
}

async function download(url: string): Promise<{ contentType: string | null; bytes: Buffer }> {
  const response = await fetch(url);
  expect(response.status, url).to.equal(200);
  return { contentType: response.headers.get('content-type'), bytes: Buffer.from(await response.arrayBuffer()) };
}

describe('provider simulator over HTTP', function () {
  this.timeout(20_000);
  let photos: Awaited<ReturnType<typeof startPhotoServer>>;
  let sim: ProviderSimulator;
  const input = (name: string) => ({ url: `${photos.url}/${name}`, person: 0 });
  const submit = (model: string, photo = 'blue.jpg', apiKey = 'key') => api(sim, apiKey, 'POST', '/v1/tasks', { model, inputs: [input(photo)] });

  before(async () => {
    const blue = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 40, g: 120, b: 220 } } }).jpeg().toBuffer();
    photos = await startPhotoServer({
      '/blue.jpg': blue,
      '/broken.jpg': Buffer.from('this is not an image'),
      '/truncated.jpg': blue.subarray(0, blue.length / 2),
      '/huge.png': hugePngHeader(),
    });
    sim = await startProviderSimulator({ latencyMs: 0, defaultConcurrency: 100 });
  });
  after(async () => {
    await sim.stop();
    await photos.close();
  });

  it('image model returns a sepia-toned JPEG copy of the first photo, downscaled to 480 on the short side', async () => {
    const accepted = await submit('image');
    expect(accepted.status).to.equal(202);
    expect(accepted.body).to.deep.include({ status: 'queued' });
    const task = await finished(sim, 'key', accepted.body.id as string);
    expect(task.result?.content_type).to.equal('image/jpeg');
    const result = await download(task.result?.url as string);
    expect(result.contentType).to.equal('image/jpeg');
    const { channels } = await sharp(result.bytes).stats();
    const meta = await sharp(result.bytes).metadata();
    expect([meta.format, meta.width, meta.height]).to.deep.equal(['jpeg', 640, 480]);
    expect(channels[0].mean, 'the blue photo turned brown').to.be.greaterThan(channels[2].mean + 30);
  });

  it('sticker model returns a PNG with transparent corners and an opaque middle', async () => {
    const task = await finished(sim, 'key', (await submit('sticker')).body.id as string);
    const result = await download(task.result?.url as string);
    expect(result.contentType).to.equal('image/png');
    const { data, info } = await sharp(result.bytes).raw().toBuffer({ resolveWithObject: true });
    expect(info.channels).to.equal(4);
    const alphaAt = (x: number, y: number) => data[(y * info.width + x) * 4 + 3];
    expect(alphaAt(0, 0)).to.equal(0);
    expect(alphaAt(info.width / 2, info.height / 2)).to.equal(255);
  });

  it('video model returns an H.264 MP4 with its index at the start', async () => {
    const task = await finished(sim, 'key', (await submit('video')).body.id as string);
    expect(task.status).to.equal('succeeded');
    const { contentType, bytes } = await download(task.result?.url as string);
    expect(contentType).to.equal('video/mp4');
    expect(bytes.subarray(4, 8).toString('latin1')).to.equal('ftyp');
    expect(bytes.indexOf('avc1')).to.be.greaterThan(0);
    expect(bytes.indexOf('moov')).to.be.lessThan(bytes.indexOf('mdat'));
  });

  it('safety model fails with error type safety and error model with internal_error', async () => {
    const safety = await finished(sim, 'key', (await submit('safety')).body.id as string);
    const error = await finished(sim, 'key', (await submit('error')).body.id as string);
    expect(safety).to.deep.include({ status: 'failed', result: null });
    expect(safety.error?.type).to.equal('safety');
    expect(error.error?.type).to.equal('internal_error');
  });

  it('with no latency a task is finished at its first poll', async () => {
    const { body } = await submit('image');
    expect((await api(sim, 'key', 'GET', `/v1/tasks/${body.id}`)).body.status).to.equal('succeeded');
  });

  for (const [photo, why] of [['broken.jpg', 'no image by its header'], ['huge.png', 'above 100 megapixels'], ['missing.jpg', 'not downloadable']]) {
    it(`refuses with 400 bad_input_image a photo that is ${why}`, async () => {
      const answer = await submit('image', photo);
      expect(answer.status).to.equal(400);
      expect(answer.body.error?.type).to.equal('bad_input_image');
    });
  }

  it('takes a truncated photo (its header reads) and fails the task as bad_input_image when the model decodes it', async () => {
    const accepted = await submit('image', 'truncated.jpg');
    expect(accepted.status).to.equal(202);
    const task = await finished(sim, 'key', accepted.body.id as string);
    expect(task).to.deep.include({ status: 'failed', result: null });
    expect(task.error).to.deep.equal({ type: 'bad_input_image', message: 'the photo data is broken' });
  });

  it('answers 404 no_model for an unknown model', async () => {
    const answer = await submit('watercolor');
    expect(answer.status).to.equal(404);
    expect(answer.body.error?.type).to.equal('no_model');
  });

  it('answers 400 invalid_request for a task without inputs', async () => {
    const answer = await api(sim, 'key', 'POST', '/v1/tasks', { model: 'image', inputs: [] });
    expect(answer.status).to.equal(400);
    expect(answer.body.error?.type).to.equal('invalid_request');
  });

  describe('moderation model (docs/mobile.md, "The marketplace of user effects")', () => {
    const moderate = (prompt: string, photo = 'blue.jpg') => api(sim, 'key', 'POST', '/v1/tasks', { model: 'moderation', inputs: [input(photo)], prompt });
    const verdictOf = async (prompt: string, photo?: string) => {
      const accepted = await moderate(prompt, photo);
      expect(accepted.status).to.equal(202);
      const task = await finished(sim, 'key', accepted.body.id!);
      expect(task.status).to.equal('succeeded');
      const answer = await download(task.result!.url);
      expect(answer.contentType).to.equal('application/json');
      return JSON.parse(answer.bytes.toString('utf8'));
    };

    it('approves clean texts with a decodable photo', async () => {
      expect(await verdictOf('Neon portrait\nGlowing\na neon portrait')).to.deep.equal({ verdict: 'approved' });
    });

    it('rejects with content_policy when the texts hold the word forbidden in any case', async () => {
      expect(await verdictOf('Nice\nThis is FoRbIdDeN stuff\nprompt')).to.deep.equal({ verdict: 'rejected', reason: 'content_policy' });
    });

    for (const photo of ['broken.jpg', 'truncated.jpg', 'missing.jpg']) {
      it(`rejects with bad_sample a sample that is no decodable photo (${photo}) instead of refusing the task`, async () => {
        expect(await verdictOf('clean texts', photo)).to.deep.equal({ verdict: 'rejected', reason: 'bad_sample' });
      });
    }
  });

  describe('studio models and speech', () => {
    const task = async (model: string, prompt: string, inputs: { url: string; person: number }[] = []) => {
      const accepted = await api(sim, 'key', 'POST', '/v1/tasks', { model, inputs, prompt });
      expect(accepted.status).to.equal(202);
      const done = await finished(sim, 'key', accepted.body.id as string);
      expect(done.status).to.equal('succeeded');
      return download(done.result!.url);
    };

    it('text_to_image draws the same picture for the same prompt and another for another, without a photo', async () => {
      const [fox, foxAgain, owl] = [await task('text_to_image', 'a fox'), await task('text_to_image', 'a fox'), await task('text_to_image', 'an owl')];
      expect(fox.contentType).to.equal('image/jpeg');
      expect(await sharp(fox.bytes).metadata()).to.include({ width: 256, height: 256 });
      expect(fox.bytes.equals(foxAgain.bytes)).to.equal(true);
      expect(fox.bytes.equals(owl.bytes)).to.equal(false);
    });

    it('photo_edit changes the first photo and needs one', async () => {
      const edited = await task('photo_edit', 'night', [input('blue.jpg')]);
      const { channels } = await sharp(edited.bytes).stats();
      // The photo is blue: its negative is not.
      expect(channels[2].mean).to.be.below(channels[0].mean);
      const refused = await api(sim, 'key', 'POST', '/v1/tasks', { model: 'photo_edit', inputs: [], prompt: 'night' });
      expect(refused.status).to.equal(400);
      expect(refused.body.error?.type).to.equal('invalid_request');
    });

    it('ask answers a text that quotes the prompt, in its language', async () => {
      const english = await task('ask', 'red or blue?');
      expect(english.contentType).to.equal('text/plain; charset=utf-8');
      expect(english.bytes.toString('utf8')).to.equal('Stylist\'s advice for "red or blue?": wear what you feel at ease in.');
      expect((await task('ask', 'красный или синий?')).bytes.toString('utf8')).to.contain('«красный или синий?»');
    });

    it('transcribes a PCM WAV into a text naming its duration; anything else is 400 invalid_audio', async () => {
      const transcribe = (body: Buffer, query = '') => fetch(`${sim.url}/v1/transcriptions${query}`, { method: 'POST', headers: { authorization: 'Bearer key', 'content-type': 'audio/wav' }, body });
      const answer = await transcribe(pcmWav(2.25), '?language=en');
      expect(answer.status).to.equal(200);
      expect(await answer.json()).to.deep.equal({ text: 'A recording of 2.3 seconds.', language: 'en', duration_ms: 2250 });
      expect(await (await transcribe(pcmWav(1))).json()).to.deep.equal({ text: 'Запись длительностью 1,0 с.', language: 'ru', duration_ms: 1000 });
      const refused = await transcribe(Buffer.from('not a wav'));
      expect(refused.status).to.equal(400);
      expect(((await refused.json()) as ApiAnswer['body']).error?.type).to.equal('invalid_audio');
      expect((await fetch(`${sim.url}/v1/transcriptions`, { method: 'POST', body: pcmWav(1) })).status).to.equal(401);
    });

    it('transcribes in OpenAI\'s shape too: multipart file and model, language optional, answered {text}; a missing field is 400', async () => {
      const transcribe = (fields: { [name: string]: string | Blob }, headers: Record<string, string> = { authorization: 'Bearer key' }) => {
        const form = new FormData();
        for (const [name, value] of Object.entries(fields)) form.append(name, value);
        return fetch(`${sim.url}/v1/audio/transcriptions`, { method: 'POST', headers, body: form });
      };
      const wav = new Blob([pcmWav(2.25)], { type: 'audio/wav' });
      expect(await (await transcribe({ file: wav, model: 'whisper-1', language: 'en' })).json()).to.deep.equal({ text: 'A recording of 2.3 seconds.' });
      expect(await (await transcribe({ file: wav, model: 'whisper-1', response_format: 'json' })).json()).to.deep.equal({ text: 'Запись длительностью 2,3 с.' });
      const refused: { [name: string]: string | Blob }[] = [{ model: 'whisper-1' }, { file: wav }, { file: wav, model: 'whisper-1', response_format: 'srt' }, { file: new Blob(['not a wav']), model: 'whisper-1' }];
      for (const fields of refused) {
        expect((await transcribe(fields)).status, Object.keys(fields).join()).to.equal(400);
      }
      expect((await transcribe({ file: wav, model: 'whisper-1' }, {})).status).to.equal(401);
    });
  });

  it('counts submitted and completed tasks, and keeps when each one ended', async () => {
    const before = sim.stats();
    const submittedAt = Date.now();
    await finished(sim, 'key', (await submit('image')).body.id as string);
    const after = sim.stats();
    expect(after).to.deep.include({ submitted: before.submitted + 1, completed: before.completed + 1, running: {} });
    expect(after.lastCompletedAt).to.be.a('number').within(submittedAt, Date.now());
    expect(after.completedAtMs).to.deep.equal([...before.completedAtMs, after.lastCompletedAt]);
  });

  it('keeps when each step of a client reference\'s task happened: received, started, finished, last polled, result served', async () => {
    const reference = randomUUID();
    expect(sim.timesOf(reference)).to.deep.equal([]);
    const sentAt = Date.now();
    const accepted = await api(sim, 'key', 'POST', '/v1/tasks', { model: 'image', inputs: [input('blue.jpg')], client_reference: reference });
    const task = await finished(sim, 'key', accepted.body.id as string);
    await download(task.result?.url as string);
    const [times, ...others] = sim.timesOf(reference);
    expect(others).to.deep.equal([]);
    expect(times.received).to.be.within(sentAt, times.started);
    expect(times.finished).to.be.a('number').at.least(times.started);
    expect(times.polled).to.be.a('number').at.least(times.finished!);
    expect(times.resultServed).to.be.a('number').within(times.polled!, Date.now());
    expect(times.calledBack, 'no callback was asked for').to.equal(null);
  });

  it('has no latest end before any task ended', async () => {
    const fresh = await startProviderSimulator({ latencyMs: 0 });
    try {
      expect(fresh.stats().lastCompletedAt).to.equal(null);
    } finally {
      await fresh.stop();
    }
  });

  describe('through the HTTP client, end to end', () => {
    const account = { kind: 'simulator' as const, apiKey: 'key' };
    let client: HttpProviderAdapter;
    before(() => {
      client = new HttpProviderAdapter({ baseUrl: sim.url });
    });

    it('submits, polls to success and downloads the result', async () => {
      const submitted = await client.submit(account, { route: { model: 'image' }, inputs: [input('blue.jpg')], clientReference: randomUUID() });
      expect(submitted.kind).to.equal('accepted');
      const polled = await client.poll(account, (submitted as { taskId: string }).taskId);
      expect(polled.kind).to.equal('succeeded');
      const result = await client.fetchResult((polled as { resultUrl: string }).resultUrl);
      expect(result.contentType).to.equal('image/jpeg');
      expect((await sharp(result.body).metadata()).format).to.equal('jpeg');
    });

    it('stages a photo in its file store: a task naming the link reads it there, and the link serves it to anyone who has it', async () => {
      const photo = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#3060c0' } }).png().toBuffer();
      const staged = await client.stageFile(account, { body: photo, contentType: 'image/png' });
      if (staged.kind !== 'staged') throw new Error(`not staged: ${staged.reason}`);
      expect(staged.url.startsWith(`${sim.url}/v1/files/`)).to.equal(true);
      expect(staged.expiresAt.getTime() - Date.now()).to.be.within(59 * 60_000, 60 * 60_000);
      expect(await download(staged.url)).to.deep.equal({ contentType: 'image/png', bytes: photo });

      const before = sim.stats();
      const submitted = await client.submit(account, { route: { model: 'image' }, inputs: [{ url: staged.url, person: 0 }], clientReference: randomUUID() });
      const polled = await client.poll(account, (submitted as { taskId: string }).taskId);
      const result = await client.fetchResult((polled as { resultUrl: string }).resultUrl);
      expect(await sharp(result.body).metadata(), 'made from the staged photo').to.deep.include({ width: 300, height: 200 });
      expect(sim.stats()).to.deep.include({ filesStaged: before.filesStaged, stagedInputsRead: before.stagedInputsRead + 1 });
    });

    it('refuses to stage for an unknown key or an empty file, and a task naming a file it does not keep as bad_input_image', async () => {
      const stranger = await startProviderSimulator({ latencyMs: 0, accounts: { known: 1 } });
      try {
        const refused = await new HttpProviderAdapter({ baseUrl: stranger.url }).stageFile({ kind: 'simulator' as const, apiKey: 'stranger' }, { body: Buffer.from('photo'), contentType: 'image/jpeg' });
        expect(refused).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 401' });
      } finally {
        await stranger.stop();
      }
      expect(await client.stageFile(account, { body: Buffer.alloc(0), contentType: 'image/jpeg' })).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 400' });
      const missing = await client.submit(account, { route: { model: 'image' }, inputs: [{ url: `${sim.url}/v1/files/${randomUUID()}`, person: 0 }], clientReference: randomUUID() });
      expect(missing).to.deep.include({ kind: 'rejected', errorCode: 'bad_input_image' });
      expect((await fetch(`${sim.url}/v1/files/${randomUUID()}`)).status).to.equal(404);
    });

    it('maps refusals and failures to error codes', async () => {
      const refused = await client.submit(account, { route: { model: 'image' }, inputs: [input('broken.jpg')], clientReference: randomUUID() });
      const unknown = await client.submit(account, { route: { model: 'watercolor' }, inputs: [input('blue.jpg')], clientReference: randomUUID() });
      const safety = await client.submit(account, { route: { model: 'safety' }, inputs: [input('blue.jpg')], clientReference: randomUUID() });
      const error = await client.submit(account, { route: { model: 'error' }, inputs: [input('blue.jpg')], clientReference: randomUUID() });
      expect(refused).to.deep.include({ kind: 'rejected', errorCode: 'bad_input_image' });
      expect(unknown).to.deep.include({ kind: 'rejected', errorCode: 'no_model' });
      expect(await client.poll(account, (safety as { taskId: string }).taskId)).to.deep.include({ kind: 'failed', errorCode: 'safety' });
      expect(await client.poll(account, (error as { taskId: string }).taskId)).to.deep.include({ kind: 'failed', errorCode: 'provider_error' });
    });
  });
});

describe('provider simulator accounts and latency', function () {
  this.timeout(10_000);
  const latencyMs = 300;
  let photos: Awaited<ReturnType<typeof startPhotoServer>>;
  let sim: ProviderSimulator;
  let client: HttpProviderAdapter;
  const request = () => ({ route: { model: 'image' }, inputs: [{ url: `${photos.url}/photo.png`, person: 0 }], clientReference: randomUUID() });

  before(async () => {
    photos = await startPhotoServer({
      '/photo.png': await sharp({ create: { width: 64, height: 64, channels: 3, background: '#808080' } }).png().toBuffer(),
      '/broken.jpg': Buffer.from('this is not an image'),
      '/truncated.jpg': await sharp({ create: { width: 640, height: 480, channels: 3, background: '#336699' } }).jpeg().toBuffer().then((jpeg) => jpeg.subarray(0, jpeg.length / 2)),
    });
    sim = await startProviderSimulator({ latencyMs, accounts: { solo: 1, pair: 2 } });
    client = new HttpProviderAdapter({ baseUrl: sim.url });
  });
  after(async () => {
    await sim.stop();
    await photos.close();
  });

  it('keeps a task running until the latency has passed', async () => {
    const started = Date.now();
    const { taskId } = (await client.submit({ kind: 'simulator' as const, apiKey: 'pair' }, request())) as { taskId: string };
    expect(await client.poll({ kind: 'simulator' as const, apiKey: 'pair' }, taskId)).to.deep.equal({ kind: 'running' });
    expect((await finished(sim, 'pair', taskId)).status).to.equal('succeeded');
    expect(Date.now() - started).to.be.at.least(latencyMs);
  });

  it('renders a light model during the latency, not before it answers the submission', async () => {
    const before = sim.stats().rendered;
    const { taskId } = (await client.submit({ kind: 'simulator' as const, apiKey: 'pair' }, request())) as { taskId: string };
    expect(sim.stats().rendered).to.equal(before);
    expect((await finished(sim, 'pair', taskId)).status).to.equal('succeeded');
    expect(sim.stats().rendered).to.equal(before + 1);
  });

  it('still refuses at the submission a file that is no image by its header, with 400 bad_input_image and no task', async () => {
    const before = sim.stats();
    const refused = await client.submit({ kind: 'simulator' as const, apiKey: 'pair' }, { ...request(), inputs: [{ url: `${photos.url}/broken.jpg`, person: 0 }] });
    expect(refused).to.deep.include({ kind: 'rejected', errorCode: 'bad_input_image' });
    expect(sim.stats()).to.deep.include({ submitted: before.submitted, running: before.running });
  });

  it('decodes the photo as the model runs, during the latency: a truncated one is taken, then its task fails as bad_input_image', async () => {
    const started = Date.now();
    const taken = await client.submit({ kind: 'simulator' as const, apiKey: 'pair' }, { ...request(), inputs: [{ url: `${photos.url}/truncated.jpg`, person: 0 }] });
    expect(taken.kind).to.equal('accepted');
    const { taskId } = taken as { taskId: string };
    expect(await client.poll({ kind: 'simulator' as const, apiKey: 'pair' }, taskId)).to.deep.equal({ kind: 'running' });
    expect((await finished(sim, 'pair', taskId)).status).to.equal('failed');
    expect(Date.now() - started).to.be.at.least(latencyMs);
    expect(await client.poll({ kind: 'simulator' as const, apiKey: 'pair' }, taskId)).to.deep.include({ kind: 'failed', errorCode: 'bad_input_image' });
  });

  it('answers 429 with Retry-After past the concurrency cap, and accepts again once a task finishes', async () => {
    const first = (await client.submit({ kind: 'simulator' as const, apiKey: 'solo' }, request())) as { taskId: string };
    const answer = await api(sim, 'solo', 'POST', '/v1/tasks', { model: 'image', inputs: request().inputs });
    expect(answer.status).to.equal(429);
    expect(answer.body.error?.type).to.equal('rate_limited');
    expect(answer.headers.get('retry-after')).to.equal('1');
    expect(sim.stats().running).to.deep.include({ solo: 1 });
    await finished(sim, 'solo', first.taskId);
    expect((await client.submit({ kind: 'simulator' as const, apiKey: 'solo' }, request())).kind).to.equal('accepted');
    expect(sim.stats().rejectedBusy).to.equal(1);
  });

  it('shows a task only to its own account', async () => {
    const { taskId } = (await client.submit({ kind: 'simulator' as const, apiKey: 'pair' }, request())) as { taskId: string };
    expect((await api(sim, 'solo', 'GET', `/v1/tasks/${taskId}`)).status).to.equal(404);
    expect((await api(sim, 'pair', 'GET', `/v1/tasks/${taskId}`)).status).to.equal(200);
  });

  it('answers 401 to an unknown API key', async () => {
    const answer = await api(sim, 'stranger', 'POST', '/v1/tasks', request());
    expect(answer.status).to.equal(401);
    expect(answer.body.error?.type).to.equal('unauthorized');
    expect(await client.submit({ kind: 'simulator' as const, apiKey: 'stranger' }, request())).to.deep.include({ kind: 'rejected', errorCode: 'lost_account' });
  });

  describe('client references', () => {
    let referenced: ProviderSimulator;
    let referencedClient: HttpProviderAdapter;
    beforeEach(async () => {
      referenced = await startProviderSimulator({ latencyMs, accounts: { one: 2, other: 2 } });
      referencedClient = new HttpProviderAdapter({ baseUrl: referenced.url });
    });
    afterEach(() => referenced.stop());

    it('keeps one task per reference and account: a repeat answers 200 with that task, takes no slot, and is counted; the reference on another account is a second task', async () => {
      const first = request();
      const accepted = (await referencedClient.submit({ kind: 'simulator' as const, apiKey: 'one' }, first)) as { taskId: string };
      const again = await api(referenced, 'one', 'POST', '/v1/tasks', { model: first.route.model, inputs: first.inputs, client_reference: first.clientReference });
      expect(again.status).to.equal(200);
      expect(again.body.id).to.equal(accepted.taskId);
      expect(referenced.stats()).to.deep.include({ submitted: 1, repeatedSubmissions: 1, secondTasks: 0, running: { one: 1 } });
      // Another account's references are its own; the work is the same, run and paid twice.
      const elsewhere = (await referencedClient.submit({ kind: 'simulator' as const, apiKey: 'other' }, first)) as { taskId: string };
      expect(elsewhere.taskId).to.be.a('string').and.not.equal(accepted.taskId);
      expect(referenced.stats().secondTasks).to.equal(1);
    });

    it('finds a task by its reference, only for its own account, and nothing for an unknown one', async () => {
      const submitted = request();
      const { taskId } = (await referencedClient.submit({ kind: 'simulator' as const, apiKey: 'one' }, submitted)) as { taskId: string };
      expect(await referencedClient.findTask({ kind: 'simulator' as const, apiKey: 'one' }, submitted.clientReference)).to.deep.equal({ kind: 'found', taskId });
      expect(await referencedClient.findTask({ kind: 'simulator' as const, apiKey: 'other' }, submitted.clientReference)).to.deep.equal({ kind: 'absent' });
      expect(await referencedClient.findTask({ kind: 'simulator' as const, apiKey: 'one' }, randomUUID())).to.deep.equal({ kind: 'absent' });
      const listed = await fetch(`${referenced.url}/v1/tasks?client_reference=${submitted.clientReference}`, { headers: { authorization: 'Bearer one' } });
      expect(((await listed.json()) as { data: { client_reference: string }[] }).data[0].client_reference).to.equal(submitted.clientReference);
    });

    it('serves its counters at /simulator/stats, for tests that run it as a process of its own', async () => {
      await referencedClient.submit({ kind: 'simulator' as const, apiKey: 'one' }, request());
      const answer = await fetch(`${referenced.url}/simulator/stats`);
      expect(answer.status).to.equal(200);
      expect(await answer.json()).to.deep.equal(JSON.parse(JSON.stringify(referenced.stats())));
      expect(referenced.stats().submitted).to.equal(1);
    });
  });
});

describe('provider simulator failures and retention', () => {
  let photos: Awaited<ReturnType<typeof startPhotoServer>>;
  const request = () => ({ model: 'image', inputs: [{ url: `${photos.url}/photo.png`, person: 0 }] });

  before(async () => {
    photos = await startPhotoServer({ '/photo.png': await sharp({ create: { width: 64, height: 64, channels: 3, background: '#808080' } }).png().toBuffer() });
  });
  after(() => photos.close());

  it('fails every task with internal_error at failure rate 1', async () => {
    const sim = await startProviderSimulator({ latencyMs: 0, failureRate: 1 });
    try {
      const { body } = await api(sim, 'any', 'POST', '/v1/tasks', request());
      expect((await finished(sim, 'any', body.id as string)).error?.type).to.equal('internal_error');
    } finally {
      await sim.stop();
    }
  });

  it('stops while videos are still encoding and removes its result directory', async () => {
    const simulatorDirs = () => new Set(readdirSync(os.tmpdir()).filter((name) => name.startsWith('provider-simulator-')));
    const before = simulatorDirs();
    const sim = await startProviderSimulator({ latencyMs: 0 });
    const ours = [...simulatorDirs()].filter((name) => !before.has(name));
    const video = { model: 'video', inputs: [{ url: `${photos.url}/photo.png`, person: 0 }] };
    for (let i = 0; i < 3; i += 1) expect((await api(sim, 'any', 'POST', '/v1/tasks', video)).status).to.equal(202);
    await sim.stop();
    expect(ours).to.have.length(1);
    expect(existsSync(path.join(os.tmpdir(), ours[0]))).to.equal(false);
  });

  it('deletes staged files once their retention has passed: their link answers 404 and a task naming one is refused', async () => {
    const sim = await startProviderSimulator({ latencyMs: 0, fileTtlMs: 50 });
    try {
      const photo = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#808080' } }).png().toBuffer();
      const staged = await new HttpProviderAdapter({ baseUrl: sim.url }).stageFile({ kind: 'simulator' as const, apiKey: 'any' }, { body: photo, contentType: 'image/png' });
      if (staged.kind !== 'staged') throw new Error(`not staged: ${staged.reason}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await fetch(staged.url)).status).to.equal(404);
      const { status, body } = await api(sim, 'any', 'POST', '/v1/tasks', { model: 'image', inputs: [{ url: staged.url, person: 0 }] });
      expect({ status, type: body.error?.type }).to.deep.equal({ status: 400, type: 'bad_input_image' });
    } finally {
      await sim.stop();
    }
  });

  it('deletes results and finished tasks once their retention has passed', async () => {
    const sim = await startProviderSimulator({ latencyMs: 0, resultTtlMs: 50 });
    try {
      const { body } = await api(sim, 'any', 'POST', '/v1/tasks', request());
      const task = await finished(sim, 'any', body.id as string);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await fetch(task.result?.url as string)).status).to.equal(404);
      expect((await api(sim, 'any', 'GET', `/v1/tasks/${body.id}`)).status).to.equal(404);
    } finally {
      await sim.stop();
    }
  });
});

describe('provider simulator started from the environment', () => {
  let photos: Awaited<ReturnType<typeof startPhotoServer>>;

  before(async () => {
    photos = await startPhotoServer({ '/photo.png': await sharp({ create: { width: 64, height: 64, channels: 3, background: '#808080' } }).png().toBuffer() });
  });
  after(() => photos.close());

  it('listens on SIM_PROVIDER_PORT with the latency, failure rate and concurrency of the environment', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const sim = await startProviderSimulatorFromConfig(loadConfig({
      SIM_PROVIDER_PORT: String(port),
      SIM_PROVIDER_LATENCY_MS: '150',
      SIM_PROVIDER_FAILURE_RATE: '1',
      SIM_PROVIDER_CONCURRENCY: '1',
    }));
    try {
      expect(sim.url).to.equal(`http://127.0.0.1:${port}`);
      const request = { model: 'image', inputs: [{ url: `${photos.url}/photo.png`, person: 0 }] };
      const first = await api(sim, 'any', 'POST', '/v1/tasks', request);
      expect((await api(sim, 'any', 'POST', '/v1/tasks', request)).status).to.equal(429);
      expect((await api(sim, 'any', 'GET', `/v1/tasks/${first.body.id}`)).body.status).to.equal('running');
      expect((await finished(sim, 'any', first.body.id as string)).error?.type).to.equal('internal_error');
    } finally {
      await sim.stop();
    }
  });

  for (const [name, value] of [['SIM_PROVIDER_FAILURE_RATE', '1.5'], ['SIM_PROVIDER_CONCURRENCY', '0'], ['SIM_PROVIDER_LATENCY_MS', 'soon']]) {
    it(`refuses to start with ${name}=${value}, naming the variable`, async () => {
      const error = await Promise.resolve().then(() => startProviderSimulatorFromConfig(loadConfig({ [name]: value }))).then(() => null, (caught: Error) => caught);
      expect(error).to.be.instanceOf(ConfigError);
      expect(error?.message).to.match(new RegExp(`^${name} `));
    });
  }
});
