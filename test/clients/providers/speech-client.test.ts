import { expect } from 'chai';
import nock from 'nock';
import { requestOpenAiTranscription } from '../../../clients/providers/speech-client';
import { pcmWav } from '../../audio';

/**
 * The request an OpenAI-compatible transcription service receives, pinned to OpenAI's documented
 * shape: the API reference's "Create transcription" (`POST https://api.openai.com/v1/audio/transcriptions`,
 * operation `createTranscription` of OpenAI's OpenAPI description, openai/openai-openapi): a
 * multipart body with the recording in `file`, `model`, optional `language` (ISO-639-1),
 * `response_format`, the key as a Bearer token; the `json` answer is `{"text": ...}`.
 */
describe('speech client: an OpenAI-compatible transcription service', () => {
  const service = { url: 'https://api.openai.com/v1', model: 'gpt-4o-mini-transcribe', apiKey: 'sk-test-key' };
  const wav = pcmWav(1.2, 16_000);
  let received: { headers: Record<string, string | string[] | undefined>; body: Buffer } | null;

  before(() => {
    nock.disableNetConnect();
  });
  after(() => {
    nock.cleanAll();
    nock.enableNetConnect();
  });
  beforeEach(() => {
    received = null;
    nock.cleanAll();
  });

  /** The endpoint answering `status` with `answer`, keeping what it received (nock hands a binary body over as hex). */
  function endpoint(status: number, answer: object) {
    return nock('https://api.openai.com').post('/v1/audio/transcriptions').reply(function (_uri, body) {
      const text = String(body);
      received = { headers: this.req.headers, body: /^([0-9a-f]{2})+$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'utf8') };
      return [status, answer];
    });
  }

  /** The received multipart body, read back as a form. */
  async function receivedForm(): Promise<FormData> {
    return new Request('https://api.openai.com/v1/audio/transcriptions', {
      method: 'POST', headers: { 'content-type': String(received!.headers['content-type']) }, body: received!.body,
    }).formData();
  }

  it('sends the recording as `file` with `model`, `language` and `response_format: json`, the key as a Bearer token, and reads `{text}`', async () => {
    const scope = endpoint(200, { text: 'Сделай фон зимним лесом' });
    const outcome = await requestOpenAiTranscription(service, { wav, language: 'ru' }, 2000);
    expect(outcome).to.deep.equal({ kind: 'transcribed', text: 'Сделай фон зимним лесом', language: null });
    expect(scope.isDone()).to.equal(true);
    expect(received!.headers.authorization).to.equal('Bearer sk-test-key');
    expect(String(received!.headers['content-type'])).to.match(/^multipart\/form-data; boundary=/);
    const form = await receivedForm();
    expect([...form.keys()]).to.deep.equal(['file', 'model', 'language', 'response_format']);
    const file = form.get('file') as File;
    expect(file.name).to.equal('speech.wav');
    expect(file.type).to.equal('audio/wav');
    expect(Buffer.from(await file.arrayBuffer()).equals(wav)).to.equal(true);
    expect([form.get('model'), form.get('language'), form.get('response_format')]).to.deep.equal(['gpt-4o-mini-transcribe', 'ru', 'json']);
  });

  it('leaves out `language` when none is asked, and the Authorization header without a key', async () => {
    endpoint(200, { text: 'hello', language: 'english' });
    const outcome = await requestOpenAiTranscription({ ...service, apiKey: null }, { wav, language: null }, 2000);
    // A service answering `verbose_json` names the language: it is read.
    expect(outcome).to.deep.equal({ kind: 'transcribed', text: 'hello', language: 'en' });
    expect(received!.headers).not.to.have.property('authorization');
    expect([...(await receivedForm()).keys()]).to.deep.equal(['file', 'model', 'response_format']);
  });

  it('is unavailable on an error answer or an answer without a text', async () => {
    endpoint(401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });
    expect(await requestOpenAiTranscription(service, { wav, language: 'en' }, 2000)).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 401' });
    endpoint(200, { transcript: 'elsewhere' });
    expect(await requestOpenAiTranscription(service, { wav, language: 'en' }, 2000)).to.deep.equal({ kind: 'unavailable', reason: 'answered without a text' });
  });
});
