import { generateKeyPairSync, sign } from 'node:crypto';
import { expect } from 'chai';
import nock from 'nock';
import { FalAdapter, falApp } from '../../../clients/providers/fal';
import { checkFalWebhook, falSignedMessage, FalWebhookKeys } from '../../../clients/providers/fal-webhook';
import { useOutsideWorld } from '../../outside-world';

/**
 * fal's adapter against fal's own shapes, answered by nock:
 * - the queue's URLs from its official client (fal-ai/fal-js, libs/client/src/queue.ts): submit
 *   `POST https://queue.fal.run/{app id}` with `fal_webhook` in the query, status
 *   `GET .../{owner}/{alias}/requests/{id}/status?logs=0`, result `GET .../requests/{id}`, cancel
 *   `PUT .../requests/{id}/cancel`; `Authorization: Key <key>` (request.ts); an app id's path left out
 *   and the `workflows`/`comfy` namespace kept (`parseEndpointId`, utils.ts);
 * - the queue statuses and the submit's answer from its types (types/common.ts: `IN_QUEUE`,
 *   `IN_PROGRESS`, `COMPLETED`, `request_id`, `status_url`...); the `{detail}` errors (response.ts,
 *   `ValidationError`); the storage upload (storage.ts: `POST https://rest.fal.ai/storage/upload/initiate
 *   ?storage_type=fal-cdn-v3` with `{content_type, file_name}` answering `{upload_url, file_url}`, then
 *   `PUT upload_url`, `X-Fal-Object-Lifecycle`);
 * - the webhook body and its ED25519 signature from fal's documentation ("Webhooks": `{request_id,
 *   gateway_request_id, status: OK | ERROR, payload, error}`; "Verifying your webhook": request id,
 *   user id, timestamp and the body's hex SHA-256 on four lines, hex signature, keys from the JWKS,
 *   five minutes' leeway); the flux result shape (`images[{url, content_type}]`, `has_nsfw_concepts`)
 *   and the `content_policy_violation` error type from its model pages and error reference;
 * - a language model's answer from the API page of `openrouter/router/vision` (its output schema:
 *   the answer as the string `output`, beside `usage`).
 */
const QUEUE = 'https://queue.fal.run';
const account = { kind: 'fal' as const, apiKey: 'fal-key-id:secret' };
const webhook = 'https://api.example.app/webhooks/provider/fal/tasks/0b7d3c1e-59a4-4c57-9d0e-3f1c3c1d2a10?expires=2000000000&signature=abc';
const route = { model: 'fal-ai/flux/dev', input: { prompt: '{{prompt}}', image_url: '{{photo}}', num_images: 1 }, output: 'images[0].url' };
const photo = 'https://storage.example.app/uploads/u/p.jpg?X-Amz-Signature=abc';
const request = { route, inputs: [{ url: photo, person: 0 }], prompt: 'a cute dog', clientReference: '0b7d3c1e-59a4-4c57-9d0e-3f1c3c1d2a10', callbackUrl: webhook };
const requestId = '024ca5b1-45d3-4afd-883e-ad3abe2a1c4d';

describe('fal adapter', () => {
  const adapter = new FalAdapter({ callTimeoutMs: 200, resultTimeoutMs: 200, fileTtlS: 600 });
  const fal = () => nock(QUEUE, { reqheaders: { authorization: 'Key fal-key-id:secret' } });
  const queued = {
    status: 'IN_QUEUE',
    request_id: requestId,
    response_url: `${QUEUE}/fal-ai/flux/requests/${requestId}`,
    status_url: `${QUEUE}/fal-ai/flux/requests/${requestId}/status`,
    cancel_url: `${QUEUE}/fal-ai/flux/requests/${requestId}/cancel`,
    queue_position: 0,
  };

  useOutsideWorld();

  it('names a request by its app\'s owner and alias, after a namespace', () => {
    expect(falApp('fal-ai/flux/dev')).to.equal('fal-ai/flux');
    expect(falApp('fal-ai/flux-pro/kontext/max')).to.equal('fal-ai/flux-pro');
    expect(falApp('workflows/someone/my-flow/extra')).to.equal('workflows/someone/my-flow');
    expect(falApp('flux')).to.equal(null);
    expect(falApp('../etc/passwd')).to.equal(null);
  });

  describe('submit', () => {
    it('queues the input built from the route at the app id, with our webhook, and answers the request id', async () => {
      fal().post('/fal-ai/flux/dev', { prompt: 'a cute dog', image_url: photo, num_images: 1 }).query({ fal_webhook: webhook }).reply(200, { ...queued, gateway_request_id: requestId });
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'accepted', taskId: requestId });
    });

    it('maps 429 to busy, 401/403 to lost_account, 404 to no_model, 422 to invalid_input or its content check to safety, 5xx to unavailable', async () => {
      const submitted = () => fal().post('/fal-ai/flux/dev').query(true);
      submitted().reply(429, { detail: 'Too many requests' }, { 'Retry-After': '3' });
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'busy', retryAfterS: 3 });
      submitted().reply(401, { detail: 'Unauthorized' });
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'rejected', errorCode: 'lost_account', message: 'Unauthorized' });
      submitted().reply(403, { detail: 'Forbidden' });
      expect(await adapter.submit(account, request)).to.deep.include({ errorCode: 'lost_account' });
      submitted().reply(404, { detail: 'Application not found' });
      expect(await adapter.submit(account, request)).to.deep.include({ errorCode: 'no_model' });
      submitted().reply(422, { detail: [{ loc: ['body', 'prompt'], msg: 'field required', type: 'value_error.missing' }] });
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'rejected', errorCode: 'invalid_input', message: 'field required' });
      submitted().reply(422, { detail: [{ loc: ['body', 'prompt'], msg: 'The content was flagged by a content checker.', type: 'content_policy_violation' }] });
      expect(await adapter.submit(account, request)).to.deep.include({ errorCode: 'safety' });
      submitted().reply(503, 'Service Unavailable');
      expect(await adapter.submit(account, request)).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 503', maybeAccepted: true });
      submitted().delay(1000).reply(200, queued);
      expect(await adapter.submit(account, request)).to.deep.include({ kind: 'unavailable', maybeAccepted: true });
    });

    it('refuses a model that is no app id without calling fal', async () => {
      expect(await adapter.submit(account, { ...request, route: { model: 'image' } })).to.deep.include({ kind: 'rejected', errorCode: 'no_model' });
    });
  });

  it('never claims to know whether a lost submission exists: findTask is unknowable, without a call', async () => {
    expect(await adapter.findTask()).to.deep.equal({ kind: 'unknowable', reason: 'fal keeps no reference of ours to find a request by' });
  });

  describe('poll', () => {
    const status = () => fal().get(`/fal-ai/flux/requests/${requestId}/status`).query({ logs: '0' });
    const result = () => fal().get(`/fal-ai/flux/requests/${requestId}`);

    it('reports IN_QUEUE and IN_PROGRESS as running', async () => {
      status().reply(200, queued);
      expect(await adapter.poll(account, requestId, route)).to.deep.equal({ kind: 'running' });
      status().reply(200, { ...queued, status: 'IN_PROGRESS', logs: [] });
      expect(await adapter.poll(account, requestId, route)).to.deep.equal({ kind: 'running' });
    });

    it('reads a COMPLETED request\'s result and takes the link at the route\'s path', async () => {
      status().reply(200, { ...queued, status: 'COMPLETED', logs: [], metrics: { inference_time: 1.2 } });
      result().reply(200, { images: [{ url: 'https://v3.fal.media/files/dog.png', content_type: 'image/png', width: 1024, height: 1024 }], seed: 196619188014358660, has_nsfw_concepts: [false] });
      expect(await adapter.poll(account, requestId, route)).to.deep.equal({ kind: 'succeeded', resultUrl: 'https://v3.fal.media/files/dog.png' });
    });

    it('reads a language model\'s answer inline at the route\'s path; a link there stays a link, an object is neither', async () => {
      const vision = { ...route, model: 'openrouter/router/vision', output: 'output' };
      const routerStatus = () => fal().get(`/openrouter/router/requests/${requestId}/status`).query({ logs: '0' });
      const routerResult = () => fal().get(`/openrouter/router/requests/${requestId}`);
      routerStatus().reply(200, { ...queued, status: 'COMPLETED' });
      routerResult().reply(200, { output: '{"verdict": "rejected", "reason": "bad_sample"}', usage: { prompt_tokens: 1220, completion_tokens: 14, total_tokens: 1234 } });
      expect(await adapter.poll(account, requestId, vision)).to.deep.equal({ kind: 'succeeded', resultUrl: null, text: '{"verdict": "rejected", "reason": "bad_sample"}' });
      routerStatus().reply(200, { ...queued, status: 'COMPLETED' });
      routerResult().reply(200, { output: 'https://v3.fal.media/files/answer.txt' });
      expect(await adapter.poll(account, requestId, vision)).to.deep.equal({ kind: 'succeeded', resultUrl: 'https://v3.fal.media/files/answer.txt' });
      routerStatus().reply(200, { ...queued, status: 'COMPLETED' });
      routerResult().reply(200, { output: { text: 'nested' } });
      expect(await adapter.poll(account, requestId, vision)).to.deep.equal({ kind: 'succeeded', resultUrl: null });
    });

    it('fails a result its safety checker blacked out, or whose app refused the content, as safety', async () => {
      status().reply(200, { ...queued, status: 'COMPLETED' });
      result().reply(200, { images: [{ url: 'https://v3.fal.media/files/black.png' }], has_nsfw_concepts: [true] });
      expect(await adapter.poll(account, requestId, route)).to.deep.include({ kind: 'failed', errorCode: 'safety' });
      status().reply(200, { ...queued, status: 'COMPLETED' });
      result().reply(422, { detail: [{ loc: ['body', 'image_url'], msg: 'The content was flagged by a content checker.', type: 'content_policy_violation' }] });
      expect(await adapter.poll(account, requestId, route)).to.deep.equal({ kind: 'failed', errorCode: 'safety', message: 'The content was flagged by a content checker.' });
    });

    it('fails an app\'s error (an unreadable photo: bad_input_image; others: provider_error), and is unavailable on a gateway\'s 5xx', async () => {
      status().reply(200, { ...queued, status: 'COMPLETED' });
      result().reply(422, { detail: [{ loc: ['body', 'image_url'], msg: 'Failed to load the image', type: 'image_load_error' }] });
      expect(await adapter.poll(account, requestId, route)).to.deep.include({ kind: 'failed', errorCode: 'bad_input_image' });
      status().reply(200, { ...queued, status: 'COMPLETED' });
      result().reply(500, { detail: 'Internal Server Error' });
      expect(await adapter.poll(account, requestId, route)).to.deep.equal({ kind: 'failed', errorCode: 'provider_error', message: 'Internal Server Error' });
      status().reply(200, { ...queued, status: 'COMPLETED' });
      result().reply(502, 'Bad Gateway');
      expect(await adapter.poll(account, requestId, route)).to.deep.equal({ kind: 'unavailable', reason: 'result HTTP 502' });
      status().reply(200, { ...queued, status: 'COMPLETED', error: 'Request timed out', error_type: 'request_timeout' });
      expect(await adapter.poll(account, requestId, route)).to.deep.equal({ kind: 'failed', errorCode: 'provider_error', message: 'Request timed out' });
    });

    it('fails on a refused key, is unavailable on a 5xx, a timeout, or without the route', async () => {
      status().reply(401, { detail: 'Unauthorized' });
      expect(await adapter.poll(account, requestId, route)).to.deep.include({ kind: 'failed', errorCode: 'lost_account' });
      status().reply(500, {});
      expect(await adapter.poll(account, requestId, route)).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 500' });
      status().delay(1000).reply(200, queued);
      expect((await adapter.poll(account, requestId, route)).kind).to.equal('unavailable');
      expect((await adapter.poll(account, requestId)).kind).to.equal('unavailable');
    });

    it('reads a webhook\'s kept answer as a poll reads the result, at the route\'s path, without a call', () => {
      const payload = { images: [{ url: 'https://v3.fal.media/files/dog.png' }], video: { url: 'https://v3.fal.media/files/dog.mp4' }, has_nsfw_concepts: [false] };
      expect(adapter.outcomeOfCallback({ status: 'OK', payload }, route)).to.deep.equal({ kind: 'succeeded', resultUrl: 'https://v3.fal.media/files/dog.png' });
      expect(adapter.outcomeOfCallback({ status: 'OK', payload }, { ...route, output: 'video.url' })).to.deep.equal({ kind: 'succeeded', resultUrl: 'https://v3.fal.media/files/dog.mp4' });
      expect(adapter.outcomeOfCallback({ status: 'OK', payload: { ...payload, has_nsfw_concepts: [true] } }, route)).to.deep.include({ kind: 'failed', errorCode: 'safety' });
      expect(adapter.outcomeOfCallback({ status: 'ERROR', payload: { detail: [{ type: 'image_load_error', msg: 'cannot read' }] }, error: 'Invalid status code: 422' }, route))
        .to.deep.equal({ kind: 'failed', errorCode: 'bad_input_image', message: 'Invalid status code: 422' });
      expect(adapter.outcomeOfCallback({ status: 'IN_PROGRESS' }, route).kind).to.equal('unavailable');
    });

    it('polls a namespaced app under its namespace', async () => {
      fal().get(`/workflows/someone/my-flow/requests/${requestId}/status`).query(true).reply(200, queued);
      expect(await adapter.poll(account, requestId, { model: 'workflows/someone/my-flow' })).to.deep.equal({ kind: 'running' });
    });
  });

  describe('stageFile, cancel', () => {
    it('initiates an upload with the file\'s type and life, PUTs the bytes there and answers the file link', async () => {
      nock('https://rest.fal.ai', { reqheaders: { authorization: 'Key fal-key-id:secret', 'x-fal-object-lifecycle': '{"expiration_duration_seconds":600}' } })
        .post('/storage/upload/initiate', { content_type: 'image/jpeg', file_name: 'photo.jpeg' }).query({ storage_type: 'fal-cdn-v3' })
        .reply(200, { upload_url: 'https://storage.fal.test/upload/abc?token=1', file_url: 'https://v3.fal.media/files/abc/photo.jpeg' });
      nock('https://storage.fal.test', { reqheaders: { 'content-type': 'image/jpeg' } }).put('/upload/abc', 'JPEGBYTES').query({ token: '1' }).reply(200);
      const staged = await adapter.stageFile(account, { body: Buffer.from('JPEGBYTES'), contentType: 'image/jpeg' });
      expect(staged).to.deep.include({ kind: 'staged', url: 'https://v3.fal.media/files/abc/photo.jpeg' });
      expect((staged as { expiresAt: Date }).expiresAt.getTime()).to.be.within(Date.now() + 590_000, Date.now() + 600_000);
    });

    it('answers unavailable when the upload is refused at either step', async () => {
      nock('https://rest.fal.ai').post('/storage/upload/initiate').query(true).reply(401, { detail: 'Unauthorized' });
      expect(await adapter.stageFile(account, { body: Buffer.from('x'), contentType: 'image/jpeg' })).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 401' });
      nock('https://rest.fal.ai').post('/storage/upload/initiate').query(true).reply(200, { upload_url: 'https://storage.fal.test/u', file_url: 'https://v3.fal.media/files/u' });
      nock('https://storage.fal.test').put('/u').reply(403);
      expect(await adapter.stageFile(account, { body: Buffer.from('x'), contentType: 'image/jpeg' })).to.deep.equal({ kind: 'unavailable', reason: 'upload HTTP 403' });
    });

    it('cancels with PUT .../cancel; a request already completed is no failure; another refusal throws for the log', async () => {
      fal().put(`/fal-ai/flux/requests/${requestId}/cancel`).reply(202, { status: 'CANCELLATION_REQUESTED' });
      await adapter.cancel(account, requestId, route);
      fal().put(`/fal-ai/flux/requests/${requestId}/cancel`).reply(400, { status: 'ALREADY_COMPLETED' });
      await adapter.cancel(account, requestId, route);
      fal().put(`/fal-ai/flux/requests/${requestId}/cancel`).reply(500, {});
      const error = await adapter.cancel(account, requestId, route).then(() => null, (caught: Error) => caught);
      expect(error?.message).to.equal(`cancel of ${requestId}: HTTP 500`);
    });
  });

  describe('webhook signatures', () => {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const body = Buffer.from(JSON.stringify({ request_id: requestId, gateway_request_id: requestId, status: 'OK', payload: { images: [{ url: 'https://url.to/image.png' }] } }));
    const nowS = 1_760_000_000;
    const headersFor = (content: Buffer, timestamp = String(nowS)) => ({
      requestId,
      userId: 'github|1234',
      timestamp,
      signature: sign(null, falSignedMessage(requestId, 'github|1234', timestamp, content), privateKey).toString('hex'),
    });

    it('accepts a signature over request id, user id, timestamp and the body\'s SHA-256 by a key of the set', () => {
      expect(falSignedMessage('r', 'u', '1', Buffer.from('{}')).toString()).to.equal('r\nu\n1\n44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
      const other = generateKeyPairSync('ed25519').publicKey;
      expect(checkFalWebhook(headersFor(body), body, [other, publicKey], 300, nowS)).to.equal('valid');
    });

    it('refuses another body, request id or key as forged, a timestamp out of the leeway as expired, a missing header as unsigned', () => {
      const headers = headersFor(body);
      expect(checkFalWebhook(headers, Buffer.from(`${body} `), [publicKey], 300, nowS)).to.equal('forged');
      expect(checkFalWebhook({ ...headers, requestId: 'another' }, body, [publicKey], 300, nowS)).to.equal('forged');
      expect(checkFalWebhook(headers, body, [generateKeyPairSync('ed25519').publicKey], 300, nowS)).to.equal('forged');
      expect(checkFalWebhook(headers, body, [publicKey], 300, nowS + 301)).to.equal('expired');
      expect(checkFalWebhook({ ...headers, userId: undefined }, body, [publicKey], 300, nowS)).to.equal('unsigned');
    });

    it('reads the Ed25519 keys of the JWKS once and keeps them; a set it cannot read keeps the ones it had', async () => {
      const jwk = publicKey.export({ format: 'jwk' });
      nock('https://rest.alpha.fal.ai').get('/.well-known/jwks.json').reply(200, { keys: [{ ...jwk, kid: 'k1', use: 'sig' }, { kty: 'RSA', n: 'x', e: 'AQAB' }] });
      const keys = new FalWebhookKeys({ jwksUrl: 'https://rest.alpha.fal.ai/.well-known/jwks.json', timeoutMs: 200, refreshMinMs: 0 });
      const read = await keys.current();
      expect(read).to.have.length(1);
      expect(checkFalWebhook(headersFor(body), body, read, 300, nowS)).to.equal('valid');
      expect(await keys.current(), 'kept').to.equal(read);
      nock('https://rest.alpha.fal.ai').get('/.well-known/jwks.json').reply(503);
      expect(await keys.refreshed()).to.equal(read);
    });
  });
});
