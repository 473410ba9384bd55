import http from 'node:http';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startProviderSimulator, type ProviderSimulator } from '../../../simulators/providers/provider-simulator';
import { expectError } from '../../accounts';
import { encodedTone, pcmWav, videoWithSound, type Encoding } from '../../audio';
import { balanceOf } from '../../generation-fixtures';
import { freePort, resetDatabase, services, startTestApp, useTestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';

describe('POST /v1/speech/transcriptions', function () {
  this.timeout(60_000);
  let simulator: ProviderSimulator;
  before(async () => {
    simulator = await startProviderSimulator({ latencyMs: 0, accounts: { 'speech-key': 1 } });
  });
  after(() => simulator.stop());
  const t = useTestApp(() => ({ config: { PROVIDER_URL: simulator.url, PROVIDER_ACCOUNTS: 'speech-key:1', RATE_VOICE_BURST: '100', RATE_VOICE_PER_MINUTE: '100' } }));
  let user: TestUser;
  beforeEach(async () => {
    await resetDatabase();
    user = await makeUser({ balance: 50 });
  });

  async function send(audio: Buffer | null, fields: Record<string, string> = {}, options: { url?: string; token?: string | null; name?: string } = {}) {
    const form = new FormData();
    for (const [name, value] of Object.entries(fields)) form.append(name, value);
    if (audio) form.append(options.name ?? 'audio', new Blob([audio]), 'recording.bin');
    const token = options.token === undefined ? user.token : options.token;
    const response = await fetch(`${options.url ?? t.app.url}/v1/speech/transcriptions`, {
      method: 'POST',
      body: form,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null, text };
  }

  describe('every accepted format, read from the content', () => {
    it('WAV (16-bit PCM written by hand): 200 {text, language, duration_ms}, the simulator naming the duration', async () => {
      const answer = await send(pcmWav(1.5));
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body).to.deep.equal({ text: 'Запись длительностью 1,5 с.', language: 'ru', duration_ms: 1500 });
    });

    const formats: Encoding[] = ['mp3', 'ogg/opus', 'webm/opus', 'm4a/aac', 'flac'];
    for (const format of formats) {
      it(`${format}`, async () => {
        const answer = await send(await encodedTone(format, 2), { language: 'en' });
        expect(answer.status, answer.text).to.equal(200);
        expect(answer.body).to.have.keys('text', 'language', 'duration_ms');
        expect(answer.body.language).to.equal('en');
        // Encoders pad a little (MP3 and AAC priming); the decoded length is what counts.
        expect(answer.body.duration_ms).to.be.within(1950, 2150);
        expect(answer.body.text).to.equal(`A recording of ${(answer.body.duration_ms / 1000).toFixed(1)} seconds.`);
      });
    }

    it('a streamed WebM whose container states no duration (as a phone recorder writes it)', async () => {
      const answer = await send(await encodedTone('webm/opus', 3, { streamed: true }));
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body.duration_ms).to.be.within(2950, 3100);
    });

    it('ignores the declared type and the file name: the content decides', async () => {
      const form = new FormData();
      form.append('audio', new Blob([await encodedTone('flac', 1)], { type: 'image/png' }), 'photo.png');
      const response = await fetch(`${t.app.url}/v1/speech/transcriptions`, { method: 'POST', body: form, headers: { authorization: `Bearer ${user.token}` } });
      expect(response.status).to.equal(200);
    });

    it('is free: no credits move', async () => {
      expect((await send(pcmWav(1))).status).to.equal(200);
      expect(await balanceOf(user.id)).to.equal(50);
      expect(await services().db('credit_transactions').where({ user_id: user.id }).count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 1 }]);
    });
  });

  describe('access and limits', () => {
    it('401 without a token, 403 registration_required for a guest', async () => {
      expectError(await send(pcmWav(1), {}, { token: null }) as never, 401, 'auth_required');
      const guest = await makeUser({ guest: true });
      expectError(await send(pcmWav(1), {}, { token: guest.token }) as never, 403, 'registration_required');
    });

    it('has its own per-user limit, narrower than writes (10 a minute by default): 429 with Retry-After', async () => {
      const limited = await startTestApp({ config: { PROVIDER_URL: simulator.url, PROVIDER_ACCOUNTS: 'speech-key:1' } });
      try {
        expect(limited.services.config.rateLimits.voice.perMinute).to.be.below(limited.services.config.rateLimits.write.perMinute);
        const statuses: number[] = [];
        for (let index = 0; index < 11; index += 1) statuses.push((await send(pcmWav(0.2), {}, { url: limited.url })).status);
        expect(statuses.slice(0, 10)).to.deep.equal(Array(10).fill(200));
        const refused = await send(pcmWav(0.2), {}, { url: limited.url });
        expectError(refused as never, 429, 'rate_limited');
        expect(Number(refused.headers.get('retry-after'))).to.be.at.least(1);
        // The write budget is untouched: another bucket.
        expect((await services().db('rate_limit_buckets').where({ key: `write:user:${user.id}` }).first())).to.equal(undefined);
      } finally {
        await limited.close();
      }
    });
  });

  describe('refusals, each with its code', () => {
    it('413 payload_too_large for a file above 10 MB, answered while it streams in, long before the upload ends', async () => {
      // A raw socket (no HTTP client library, no interceptor in between) sends 40 MB in chunks
      // without a Content-Length and notes how much had left it when the answer came.
      const url = new URL(t.app.url);
      const boundary = 'voice-boundary-123';
      const total = 40 * 1024 * 1024;
      const socket = net.connect(Number(url.port), url.hostname);
      await new Promise((resolve) => socket.once('connect', resolve));
      const answer = new Promise<{ head: string; sentWhenAnswered: number }>((resolve) => {
        let head = '';
        socket.on('data', (chunk: Buffer) => {
          head += chunk.toString('latin1');
          if (head.includes('\r\n\r\n')) resolve({ head, sentWhenAnswered: socket.bytesWritten });
        });
      });
      socket.on('error', () => undefined);
      const chunked = (data: Buffer | string) => {
        const bytes = Buffer.isBuffer(data) ? data : Buffer.from(data);
        return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, Buffer.from('\r\n')]);
      };
      socket.write(`POST /v1/speech/transcriptions HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${user.token}\r\n`
        + `Content-Type: multipart/form-data; boundary=${boundary}\r\nTransfer-Encoding: chunked\r\n\r\n`);
      socket.write(chunked(`--${boundary}\r\ncontent-disposition: form-data; name="audio"; filename="big.wav"\r\n\r\n`));
      let answered = false;
      void answer.then(() => { answered = true; });
      const piece = chunked(Buffer.alloc(256 * 1024, 7));
      for (let sent = 0; sent < total && !answered && !socket.destroyed; sent += 256 * 1024) {
        if (!socket.write(piece)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), answer, delay(5000)]);
      }
      const { head, sentWhenAnswered } = await answer;
      socket.destroy();
      expect(head).to.match(/^HTTP\/1\.1 413 /);
      expect(head.toLowerCase()).to.contain('connection: close');
      // 10 MB read, plus what the kernel buffers hold on both sides: far from all 40.
      expect(sentWhenAnswered).to.be.below(total / 2, 'answered long before the upload ended');
    });

    it('413 at once for a declared Content-Length above the cap', async () => {
      const answer = await send(Buffer.alloc(10 * 1024 * 1024 + 1));
      expectError(answer as never, 413, 'payload_too_large');
    });

    it('413 payload_too_large for a recording over 120 s: stated by its container, or found by decoding a streamed one', async () => {
      expectError(await send(pcmWav(121)) as never, 413, 'payload_too_large');
      expectError(await send(await encodedTone('webm/opus', 125, { streamed: true })) as never, 413, 'payload_too_large');
      expect((await send(pcmWav(119.5))).status).to.equal(200);
    });

    it('415 unsupported_media_type for another format, unreadable bytes, or a video', async () => {
      for (const body of [
        await encodedTone('ogg/vorbis', 1),
        await encodedTone('adts/aac', 1),
        Buffer.from('this is not audio at all, just some text'),
        Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex'),
        await videoWithSound(),
      ]) {
        expectError(await send(body) as never, 415, 'unsupported_media_type');
      }
    });

    it('415 for a file whose header is right but whose audio does not decode', async () => {
      const truncated = (await encodedTone('flac', 2)).subarray(0, 60);
      expectError(await send(truncated) as never, 415, 'unsupported_media_type');
    });

    it('422 validation_error for an empty file, no file in `audio`, a language other than ru or en, or a JSON body', async () => {
      const empty = await send(Buffer.alloc(0));
      expectError(empty as never, 422, 'validation_error');
      expect(empty.body.error.details).to.deep.equal([{ loc: ['body', 'audio'], msg: 'the recording is empty', type: 'empty_file' }]);
      const elsewhere = await send(pcmWav(1), {}, { name: 'file' });
      expectError(elsewhere as never, 422, 'validation_error');
      expect(elsewhere.body.error.details[0].loc).to.deep.equal(['body', 'audio']);
      const language = await send(pcmWav(1), { language: 'de' });
      expectError(language as never, 422, 'validation_error');
      expect(language.body.error.details[0].loc).to.deep.equal(['body', 'language']);
      expectError(await t.api.post('/v1/speech/transcriptions', { audio: 'x' }, { token: user.token }), 422, 'validation_error');
    });

    it('503 provider_unavailable when recognition is down', async () => {
      const down = await startTestApp({ config: { PROVIDER_URL: `http://127.0.0.1:${await freePort()}`, PROVIDER_ACCOUNTS: 'speech-key:1' } });
      try {
        expectError(await send(pcmWav(1), {}, { url: down.url }) as never, 503, 'provider_unavailable');
      } finally {
        await down.close();
      }
    });

    it('503 provider_unavailable when recognition is later than SPEECH_DEADLINE_MS', async () => {
      const silent = http.createServer(() => undefined);
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const late = await startTestApp({ config: { PROVIDER_URL: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, PROVIDER_ACCOUNTS: 'speech-key:1', SPEECH_DEADLINE_MS: '300' } });
      try {
        const started = Date.now();
        expectError(await send(pcmWav(1), {}, { url: late.url }) as never, 503, 'provider_unavailable');
        expect(Date.now() - started).to.be.below(5000);
      } finally {
        await late.close();
        silent.closeAllConnections();
        silent.close();
      }
    });

    it('503 when the provider refuses (a key it does not know)', async () => {
      const refused = await startTestApp({ config: { PROVIDER_URL: simulator.url, PROVIDER_ACCOUNTS: 'unknown-key:1' } });
      try {
        expectError(await send(pcmWav(1), {}, { url: refused.url }) as never, 503, 'provider_unavailable');
      } finally {
        await refused.close();
      }
    });
  });

  describe('on an OpenAI-compatible service (TRANSCRIPTION_URL), the simulator answering in its shape', () => {
    /** An app whose recognition is at `url`; PROVIDER_URL points nowhere, so only that service can answer. */
    async function withService(url: string, config: Record<string, string> = {}) {
      return startTestApp({ config: { TRANSCRIPTION_URL: url, TRANSCRIPTION_API_KEY: 'speech-key', PROVIDER_URL: `http://127.0.0.1:${await freePort()}`, ...config } });
    }

    it('200 {text, language, duration_ms}: the text is the service\'s, the language the one asked, else ru', async () => {
      const app = await withService(`${simulator.url}/v1`, { TRANSCRIPTION_MODEL: 'whisper-1' });
      try {
        expect((await send(pcmWav(1.5), { language: 'en' }, { url: app.url })).body).to.deep.equal({ text: 'A recording of 1.5 seconds.', language: 'en', duration_ms: 1500 });
        expect((await send(await encodedTone('webm/opus', 2), {}, { url: app.url })).body).to.include({ language: 'ru' });
      } finally {
        await app.close();
      }
    });

    it('503 provider_unavailable when the service refuses the key, is down, or is later than SPEECH_DEADLINE_MS', async () => {
      const silent = http.createServer(() => undefined);
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const apps = [
        await withService(`${simulator.url}/v1`, { TRANSCRIPTION_API_KEY: 'unknown-key' }),
        await withService(`http://127.0.0.1:${await freePort()}/v1`),
        await withService(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`, { SPEECH_DEADLINE_MS: '300' }),
      ];
      try {
        for (const app of apps) expectError(await send(pcmWav(1), {}, { url: app.url }) as never, 503, 'provider_unavailable');
      } finally {
        await Promise.all(apps.map((app) => app.close()));
        silent.closeAllConnections();
        silent.close();
      }
    });
  });

  it('is published in /v1/openapi.json as a multipart upload with its answers', async () => {
    const operation = (await t.api.get('/v1/openapi.json')).body.paths['/v1/speech/transcriptions'].post;
    expect(operation.requestBody.content).to.have.key('multipart/form-data');
    expect(operation.responses).to.include.keys('200', '413', '415', '422', '429', '503');
    expect(operation.responses).not.to.have.key('501');
  });
});
