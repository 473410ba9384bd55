import { expect } from 'chai';
import nock from 'nock';
import { ReplicateAdapter } from '../../../clients/providers/replicate';
import { checkStandardWebhook, ReplicateWebhookSecrets, standardWebhookSignature } from '../../../clients/providers/replicate-webhook';
import { taskCallbackUrl } from '../../../clients/providers/task-callback';
import { freePort } from '../../harness';
import { useOutsideWorld } from '../../outside-world';

/**
 * Replicate's adapter against Replicate's own documented shapes, answered by nock:
 * - requests and answers from its OpenAPI document (tryAGI/Replicate, src/libs/Replicate/openapi.json):
 *   `models.predictions.create`, `predictions.create` (`schemas_prediction_request`: `input`,
 *   `webhook`, `webhook_events_filter`; `version` for a version), `predictions.get` and its example
 *   prediction, `predictions.list` (`{next, previous, results}`, newest first, `created_after`),
 *   `predictions.cancel`, `files.create` (multipart `content`; `schemas_file_response` with `urls.get`
 *   and `expires_at`), `webhooks.default.secret.get` (`{key}`), the statuses of
 *   `schemas_prediction_response` (starting, processing, succeeded, failed, canceled, aborted);
 * - the prediction's `webhook` field, the 429 with `Retry-After` and the `{detail}` error bodies from
 *   its official JS client (replicate/replicate-javascript: index.d.ts `Prediction`, index.test.ts);
 * - the webhook signature from that client's `validateWebhook` (lib/util.js) and its test vector
 *   (index.test.ts, "Can be used to validate webhook", itself the Standard Webhooks/svix one);
 * - the NSFW failure from Replicate's cog-stable-diffusion ("NSFW content detected. Try running it
 *   again, or try a different prompt.", replicate/cog-stable-diffusion #24);
 * - the 429's "Expected available in N seconds" detail is the throttling message of its API;
 * - a language model's output (openai/gpt-4.1-mini, meta/meta-llama-3-8b-instruct): Replicate's docs on
 *   streaming output say such models stream tokens and their final `output` is the list of those
 *   strings (the JS client's README joins it: `output.join("")`); some answer one string.
 */
const BASE = 'https://api.replicate.com/v1';
const account = { kind: 'replicate' as const, apiKey: 'r8_token' };
const generationId = '0b7d3c1e-59a4-4c57-9d0e-3f1c3c1d2a10';
const otherId = '9a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const webhook = taskCallbackUrl('https://api.example.app', 'x'.repeat(32), generationId, 2_000_000_000, 'replicate');
const route = { model: 'black-forest-labs/flux-kontext-pro', input: { prompt: 'make it {{prompt}}', input_image: '{{photo}}', output_format: 'jpg' }, output: '' };
const photo = 'https://storage.example.app/uploads/u/p.jpg?X-Amz-Signature=abc';
const request = { route, inputs: [{ url: photo, person: 0 }], prompt: 'winter', clientReference: generationId, callbackUrl: webhook };

/** The example prediction of `predictions.get` in the OpenAPI document, with our fields. */
function prediction(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    id: 'gm3qorzdhgbfurvjtvhg6dckhu',
    model: 'black-forest-labs/flux-kontext-pro',
    version: 'hidden',
    input: { prompt: 'make it winter', input_image: photo, output_format: 'jpg' },
    logs: '',
    output: null,
    data_removed: false,
    error: null,
    status: 'starting',
    created_at: '2023-09-08T16:19:34.765994Z',
    source: 'api',
    urls: {
      web: 'https://replicate.com/p/gm3qorzdhgbfurvjtvhg6dckhu',
      get: 'https://api.replicate.com/v1/predictions/gm3qorzdhgbfurvjtvhg6dckhu',
      cancel: 'https://api.replicate.com/v1/predictions/gm3qorzdhgbfurvjtvhg6dckhu/cancel',
    },
    webhook,
    webhook_events_filter: ['completed'],
    ...fields,
  };
}

describe('Replicate adapter', () => {
  const adapter = new ReplicateAdapter({ callTimeoutMs: 200, resultTimeoutMs: 200, lookupWindowS: 900, lookupMaxPages: 3 });
  const replicate = () => nock(BASE, { reqheaders: { authorization: 'Bearer r8_token' } });

  useOutsideWorld();

  describe('submit', () => {
    it('creates a prediction of an official model with the input built from the route, our webhook and the completed events only', async () => {
      replicate().post('/models/black-forest-labs/flux-kontext-pro/predictions', {
        input: { prompt: 'make it winter', input_image: photo, output_format: 'jpg' },
        webhook,
        webhook_events_filter: ['completed'],
      }).reply(201, prediction({}));
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'accepted', taskId: 'gm3qorzdhgbfurvjtvhg6dckhu' });
    });

    it('creates a prediction of a version with POST /predictions and its version id', async () => {
      const version = '5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa';
      replicate().post('/predictions', (body) => body.version === version && body.input.prompt === 'make it winter').reply(202, prediction({}));
      const versioned = { ...request, route: { ...route, model: `replicate/hello-world:${version}` } };
      expect(await adapter.submit(account, versioned)).to.deep.equal({ kind: 'accepted', taskId: 'gm3qorzdhgbfurvjtvhg6dckhu' });
    });

    it('reports a 429 as busy for its Retry-After, or for the seconds its detail names', async () => {
      replicate().post('/models/black-forest-labs/flux-kontext-pro/predictions').reply(429, { detail: 'Too many requests' }, { 'Retry-After': '7' });
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'busy', retryAfterS: 7 });
      replicate().post('/models/black-forest-labs/flux-kontext-pro/predictions').reply(429, { detail: 'Request was throttled. Expected available in 12 seconds.', status: 429 });
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'busy', retryAfterS: 12 });
    });

    it('rejects 401 and 403 as lost_account, 404 as no_model and 422 as invalid_input that may be about the photos (Replicate names no cause), with the detail', async () => {
      for (const [status, errorCode] of [[401, 'lost_account'], [403, 'lost_account'], [404, 'no_model'], [422, 'invalid_input']] as const) {
        replicate().post('/models/black-forest-labs/flux-kontext-pro/predictions').reply(status, { title: 'Refused', detail: `refused ${status}`, status });
        const mayBePhotos = status === 422 ? { mayBePhotos: true } : {};
        expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'rejected', errorCode, message: `refused ${status}`, ...mayBePhotos });
      }
    });

    it('answers a 5xx or a timeout as unavailable that may have been accepted, a refused connection as surely not', async () => {
      replicate().post('/models/black-forest-labs/flux-kontext-pro/predictions').reply(500, { detail: 'Internal server error' });
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 500', maybeAccepted: true });
      replicate().post('/models/black-forest-labs/flux-kontext-pro/predictions').delay(1000).reply(201, prediction({}));
      expect(await adapter.submit(account, request)).to.deep.include({ kind: 'unavailable', maybeAccepted: true });
      const closed = new ReplicateAdapter({ baseUrl: `http://127.0.0.1:${await freePort()}/v1`, callTimeoutMs: 2000 });
      expect(await closed.submit(account, request)).to.deep.include({ kind: 'unavailable', maybeAccepted: false });
    });

    it('refuses a model that is neither owner/name nor a version without calling Replicate', async () => {
      expect(await adapter.submit(account, { ...request, route: { model: 'image' } })).to.deep.include({ kind: 'rejected', errorCode: 'no_model' });
      expect(await adapter.submit(account, { ...request, route: { model: '../files' } })).to.deep.include({ kind: 'rejected', errorCode: 'no_model' });
    });
  });

  describe('poll', () => {
    const poll = (answer: Record<string, unknown>, output = route.output) => {
      replicate().get('/predictions/gm3qorzdhgbfurvjtvhg6dckhu').reply(200, prediction(answer));
      return adapter.poll(account, 'gm3qorzdhgbfurvjtvhg6dckhu', { ...route, output });
    };

    it('reports starting and processing as running', async () => {
      expect(await poll({ status: 'starting' })).to.deep.equal({ kind: 'running' });
      expect(await poll({ status: 'processing' })).to.deep.equal({ kind: 'running' });
    });

    it('finds the result in each output shape: a link, a list of links, a file object at the route\'s path', async () => {
      const link = 'https://replicate.delivery/xezq/output.jpg';
      expect(await poll({ status: 'succeeded', output: link })).to.deep.equal({ kind: 'succeeded', resultUrl: link });
      expect(await poll({ status: 'succeeded', output: [link, 'https://replicate.delivery/xezq/2.jpg'] })).to.deep.equal({ kind: 'succeeded', resultUrl: link });
      expect(await poll({ status: 'succeeded', output: { video: { url: link } } }, 'video')).to.deep.equal({ kind: 'succeeded', resultUrl: link });
      expect(await poll({ status: 'succeeded', output: null })).to.deep.equal({ kind: 'succeeded', resultUrl: null });
    });

    it('reads a language model\'s answer inline: its list of tokens joined, or one string; a link stays a link', async () => {
      const tokens = ['{"', 'verdict', '":', ' "', 'approved', '"}'];
      expect(await poll({ status: 'succeeded', output: tokens })).to.deep.equal({ kind: 'succeeded', resultUrl: null, text: '{"verdict": "approved"}' });
      expect(await poll({ status: 'succeeded', output: ['Wear', ' the', ' blue', ' one.'] })).to.deep.equal({ kind: 'succeeded', resultUrl: null, text: 'Wear the blue one.' });
      expect(await poll({ status: 'succeeded', output: 'Wear the blue one.' })).to.deep.equal({ kind: 'succeeded', resultUrl: null, text: 'Wear the blue one.' });
      const link = 'https://replicate.delivery/xezq/answer.txt';
      expect(await poll({ status: 'succeeded', output: [link] })).to.deep.equal({ kind: 'succeeded', resultUrl: link });
      expect(await poll({ status: 'succeeded', output: [] })).to.deep.equal({ kind: 'succeeded', resultUrl: null });
      expect(await poll({ status: 'succeeded', output: ['a', 1] })).to.deep.equal({ kind: 'succeeded', resultUrl: null });
    });

    it('reads a webhook\'s kept answer as a poll reads the prediction, at the route\'s path, without a call', () => {
      const link = 'https://replicate.delivery/xezq/output.mp4';
      expect(adapter.outcomeOfCallback({ status: 'succeeded', output: { video: { url: link }, poster: 'https://replicate.delivery/xezq/p.jpg' }, error: null }, { ...route, output: 'video' }))
        .to.deep.equal({ kind: 'succeeded', resultUrl: link });
      expect(adapter.outcomeOfCallback({ status: 'failed', output: null, error: 'CUDA out of memory' }, route)).to.deep.equal({ kind: 'failed', errorCode: 'provider_error', message: 'CUDA out of memory' });
      expect(adapter.outcomeOfCallback({ status: 'processing' }, route)).to.deep.equal({ kind: 'running' });
    });

    it('maps an NSFW failure to safety, any other failure to provider_error, canceled and aborted to their own codes', async () => {
      expect(await poll({ status: 'failed', error: 'NSFW content detected. Try running it again, or try a different prompt.' })).to.deep.include({ kind: 'failed', errorCode: 'safety' });
      expect(await poll({ status: 'failed', error: 'The input or output was flagged as sensitive. Please try again with different inputs. (E005)' })).to.deep.include({ errorCode: 'safety' });
      expect(await poll({ status: 'failed', error: 'CUDA out of memory' })).to.deep.equal({ kind: 'failed', errorCode: 'provider_error', message: 'CUDA out of memory' });
      expect(await poll({ status: 'canceled' })).to.deep.include({ kind: 'failed', errorCode: 'canceled' });
      expect(await poll({ status: 'aborted' })).to.deep.include({ kind: 'failed', errorCode: 'provider_timeout' });
    });

    it('fails on a refused key or an unknown prediction, and is unavailable on a 5xx, a 429 or a timeout', async () => {
      replicate().get('/predictions/p1').reply(401, { detail: 'Invalid token.' });
      expect(await adapter.poll(account, 'p1', route)).to.deep.equal({ kind: 'failed', errorCode: 'lost_account', message: 'Invalid token.' });
      replicate().get('/predictions/p1').reply(404, { detail: 'Not found.' });
      expect(await adapter.poll(account, 'p1', route)).to.deep.include({ kind: 'failed', errorCode: 'provider_error' });
      replicate().get('/predictions/p1').reply(503, {});
      expect(await adapter.poll(account, 'p1', route)).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 503' });
      replicate().get('/predictions/p1').reply(429, {});
      expect((await adapter.poll(account, 'p1', route)).kind).to.equal('unavailable');
      replicate().get('/predictions/p1').delay(1000).reply(200, prediction({}));
      expect((await adapter.poll(account, 'p1', route)).kind).to.equal('unavailable');
    });
  });

  describe('findTask', () => {
    const page = (results: unknown[], next: string | null = null) => ({ next, previous: null, results });
    const list = () => replicate().get('/predictions').query((query) => typeof query.created_after === 'string' && Date.now() - Date.parse(query.created_after) >= 899_000);
    const theirs = (id: string, at: string) => prediction({ id, webhook: taskCallbackUrl('https://api.example.app', 'y'.repeat(32), otherId, 2_000_000_000, 'replicate'), created_at: at });

    it('finds the first prediction whose webhook names the generation, across pages, newest first', async () => {
      const later = `${BASE}/predictions?cursor=cD0yMDIz`;
      list().reply(200, page([theirs('newest', '2023-09-08T16:20:00Z'), prediction({ id: 'second-try' })], later));
      replicate().get('/predictions').query({ cursor: 'cD0yMDIz' }).reply(200, page([theirs('old', '2023-09-08T16:18:00Z'), prediction({ id: 'first-try' })]));
      expect(await adapter.findTask(account, generationId)).to.deep.equal({ kind: 'found', taskId: 'first-try' });
    });

    it('is absent only when every prediction made through the API shows a webhook of another generation', async () => {
      list().reply(200, page([theirs('a', '2023-09-08T16:20:00Z'), prediction({ id: 'web-run', webhook: undefined, source: 'web' })]));
      expect(await adapter.findTask(account, generationId)).to.deep.equal({ kind: 'absent' });
    });

    it('is unavailable, never absent, when a prediction does not show its webhook or the pages run out', async () => {
      list().reply(200, page([theirs('a', '2023-09-08T16:20:00Z'), prediction({ id: 'unknown', webhook: undefined })]));
      expect((await adapter.findTask(account, generationId)).kind).to.equal('unavailable');
      for (let at = 0; at < 3; at += 1) {
        replicate().get('/predictions').query(true).reply(200, page([theirs(`p${at}`, '2023-09-08T16:20:00Z')], `${BASE}/predictions?cursor=${at}`));
      }
      expect(await adapter.findTask(account, generationId)).to.deep.include({ kind: 'unavailable', reason: 'more than 3 pages of recent predictions' });
    });

    it('reads a next page that names another address at its own base, with that page\'s query (a proxy in front: the token goes nowhere else), and is unavailable on a 5xx or a timeout', async () => {
      list().reply(200, page([theirs('a', '2023-09-08T16:20:00Z')], 'https://elsewhere.example/v1/predictions?cursor=cD0y'));
      replicate().get('/predictions').query({ cursor: 'cD0y' }).reply(200, page([prediction({ id: 'behind-the-proxy' })]));
      expect(await adapter.findTask(account, generationId)).to.deep.equal({ kind: 'found', taskId: 'behind-the-proxy' });
      list().reply(502, 'Bad gateway');
      expect(await adapter.findTask(account, generationId)).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 502' });
      list().delay(1000).reply(200, page([]));
      expect((await adapter.findTask(account, generationId)).kind).to.equal('unavailable');
    });
  });

  describe('stageFile, cancel, fetchResult', () => {
    it('uploads a photo to the Files API as multipart content and answers its urls.get and expiry', async () => {
      replicate().post('/files', (body: string) => body.includes('name="content"; filename="photo.jpeg"') && body.includes('JPEGBYTES') && body.includes('Content-Type: image/jpeg'))
        .reply(201, {
          id: 'cneqzikepnug6xezperrr4z55o',
          urls: { get: 'https://api.replicate.com/v1/files/cneqzikepnug6xezperrr4z55o' },
          content_type: 'image/jpeg',
          size: 9,
          checksums: { sha256: 'f047' },
          metadata: {},
          created_at: '2024-02-21T12:54:18.578761Z',
          expires_at: '2024-02-21T13:54:18.578761Z',
        });
      expect(await adapter.stageFile(account, { body: Buffer.from('JPEGBYTES'), contentType: 'image/jpeg' })).to.deep.equal({
        kind: 'staged',
        url: 'https://api.replicate.com/v1/files/cneqzikepnug6xezperrr4z55o',
        expiresAt: new Date('2024-02-21T13:54:18.578761Z'),
      });
      replicate().post('/files').reply(413, { detail: 'Files must be less than 100MB in size' });
      expect(await adapter.stageFile(account, { body: Buffer.from('x'), contentType: 'image/jpeg' })).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 413' });
    });

    it('cancels with POST /predictions/{id}/cancel, and throws (for the log) when Replicate does not answer 2xx', async () => {
      replicate().post('/predictions/p1/cancel').reply(200, prediction({ id: 'p1', status: 'canceled' }));
      await adapter.cancel(account, 'p1');
      replicate().post('/predictions/p1/cancel').reply(500, {});
      const error = await adapter.cancel(account, 'p1').then(() => null, (caught: Error) => caught);
      expect(error?.message).to.equal('cancel of p1: HTTP 500');
    });

    it('downloads a result from replicate.delivery with its media type', async () => {
      nock('https://replicate.delivery').get('/xezq/output.jpg').reply(200, 'JPEG', { 'content-type': 'image/jpeg' });
      const result = await adapter.fetchResult('https://replicate.delivery/xezq/output.jpg');
      expect(result).to.deep.equal({ body: Buffer.from('JPEG'), contentType: 'image/jpeg' });
    });
  });

  describe('webhook signatures', () => {
    // The Standard Webhooks test vector of replicate-javascript's index.test.ts.
    const vector = {
      headers: { id: 'msg_p5jXN8AQM9LWM0D4loKWxJek', timestamp: '1614265330', signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=' },
      body: Buffer.from('{"test": 2432232314}'),
      secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    };

    it('accepts the published test vector, with any of several secrets and signatures', () => {
      expect(checkStandardWebhook(vector.headers, vector.body, [vector.secret], 300, 1614265330)).to.equal('valid');
      const rotated = { ...vector.headers, signature: `v1,bm90IHRoaXMgb25l ${vector.headers.signature}` };
      expect(checkStandardWebhook(rotated, vector.body, ['whsec_b3RoZXI=', vector.secret], 300, 1614265330)).to.equal('valid');
      expect(standardWebhookSignature(vector.secret, vector.headers.id, vector.headers.timestamp, vector.body)).to.equal(vector.headers.signature);
    });

    it('refuses a changed body, id or secret as forged, an old or future timestamp as expired, a missing header as unsigned', () => {
      expect(checkStandardWebhook(vector.headers, Buffer.from('{"test": 2432232315}'), [vector.secret], 300, 1614265330)).to.equal('forged');
      expect(checkStandardWebhook({ ...vector.headers, id: 'msg_other' }, vector.body, [vector.secret], 300, 1614265330)).to.equal('forged');
      expect(checkStandardWebhook(vector.headers, vector.body, ['whsec_b3RoZXI='], 300, 1614265330)).to.equal('forged');
      expect(checkStandardWebhook(vector.headers, vector.body, [vector.secret], 300, 1614265330 + 301)).to.equal('expired');
      expect(checkStandardWebhook(vector.headers, vector.body, [vector.secret], 300, 1614265330 - 301)).to.equal('expired');
      expect(checkStandardWebhook({ ...vector.headers, signature: undefined }, vector.body, [vector.secret], 300, 1614265330)).to.equal('unsigned');
    });

    it('reads each account\'s secret once from GET /webhooks/default/secret, and again after a forged check at most once a minute', async () => {
      nock(BASE, { reqheaders: { authorization: 'Bearer r8_a' } }).get('/webhooks/default/secret').reply(200, { key: 'whsec_5WbX5kEWLlfzsGNjH64I8lOOqUB6e8FH' });
      nock(BASE, { reqheaders: { authorization: 'Bearer r8_b' } }).get('/webhooks/default/secret').reply(503, {});
      const secrets = new ReplicateWebhookSecrets({ configured: [], baseUrl: BASE, accounts: () => [{ kind: 'replicate', apiKey: 'r8_a' }, { kind: 'replicate', apiKey: 'r8_b' }], timeoutMs: 200 });
      expect(await secrets.current()).to.deep.equal(['whsec_5WbX5kEWLlfzsGNjH64I8lOOqUB6e8FH']);
      expect(await secrets.current(), 'kept').to.deep.equal(['whsec_5WbX5kEWLlfzsGNjH64I8lOOqUB6e8FH']);
      expect(await secrets.refreshed(), 'read a moment ago').to.equal(null);
      const configured = new ReplicateWebhookSecrets({ configured: [vector.secret], baseUrl: BASE, accounts: () => [account], timeoutMs: 200 });
      expect(await configured.current()).to.deep.equal([vector.secret]);
    });
  });
});
