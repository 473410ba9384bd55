import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import nock from 'nock';
import { ResultTooLargeError } from '../../../clients/providers/adapter';
import { HttpProviderAdapter } from '../../../clients/providers/http-client';
import { freePort } from '../../harness';
import { useOutsideWorld } from '../../outside-world';

const BASE = 'http://provider.test';
const account = { kind: 'simulator' as const, apiKey: 'key-1' };
const request = { route: { model: 'image' }, inputs: [{ url: 'https://storage.test/photo.jpg?sig=1', person: 0 }], clientReference: 'generation-1' };
const sent = { model: 'image', inputs: request.inputs, client_reference: 'generation-1' };

describe('provider HTTP client', () => {
  const client = new HttpProviderAdapter({ baseUrl: `${BASE}/`, submitTimeoutMs: 200, pollTimeoutMs: 200, lookupTimeoutMs: 200, resultTimeoutMs: 200, stageTimeoutMs: 200 });
  const provider = () => nock(BASE, { reqheaders: { authorization: 'Bearer key-1' } });

  useOutsideWorld();

  describe('submit', () => {
    it('sends the model, the inputs and the client reference with the account key and returns the task id of a 202', async () => {
      provider().post('/v1/tasks', sent).reply(202, { id: 'task-1', status: 'queued' });
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'accepted', taskId: 'task-1' });
    });

    it('takes the 200 of a reference the provider already had as the task it names', async () => {
      provider().post('/v1/tasks', sent).reply(200, { id: 'task-1', status: 'running' });
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'accepted', taskId: 'task-1' });
    });

    it('reports a 429 as busy for the seconds of Retry-After', async () => {
      provider().post('/v1/tasks').reply(429, { error: { type: 'rate_limited', message: 'cap' } }, { 'Retry-After': '7' });
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'busy', retryAfterS: 7 });
    });

    it('reads a Retry-After given as an HTTP date', async () => {
      const at = new Date(Date.now() + 30_000).toUTCString();
      provider().post('/v1/tasks').reply(429, {}, { 'Retry-After': at });
      const outcome = await client.submit(account, request);
      expect(outcome.kind).to.equal('busy');
      expect((outcome as { retryAfterS: number }).retryAfterS).to.be.within(28, 30);
    });

    it('waits 5 seconds after a 429 without Retry-After', async () => {
      provider().post('/v1/tasks').reply(429, { error: { type: 'rate_limited' } });
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'busy', retryAfterS: 5 });
    });

    it('rejects a 400 bad_input_image as bad_input_image', async () => {
      provider().post('/v1/tasks').reply(400, { error: { type: 'bad_input_image', message: 'cannot decode' } });
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'rejected', errorCode: 'bad_input_image', message: 'cannot decode' });
    });

    it('rejects a 400 invalid_request as provider_error', async () => {
      provider().post('/v1/tasks').reply(400, { error: { type: 'invalid_request', message: 'inputs' } });
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'rejected', errorCode: 'provider_error', message: 'inputs' });
    });

    for (const status of [401, 403]) {
      it(`rejects a ${status} as lost_account`, async () => {
        provider().post('/v1/tasks').reply(status, { error: { type: 'unauthorized' } });
        expect(await client.submit(account, request)).to.deep.equal({ kind: 'rejected', errorCode: 'lost_account', message: null });
      });
    }

    it('rejects a 404 as no_model', async () => {
      provider().post('/v1/tasks').reply(404, { error: { type: 'no_model' } });
      expect(await client.submit(account, request)).to.deep.include({ kind: 'rejected', errorCode: 'no_model' });
    });

    it('rejects another 4xx without a JSON body as provider_error', async () => {
      provider().post('/v1/tasks').reply(413, 'too large');
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'rejected', errorCode: 'provider_error', message: null });
    });

    it('reports a 500 as unavailable, maybe accepted', async () => {
      provider().post('/v1/tasks').reply(500, 'oops');
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 500', maybeAccepted: true });
    });

    it('reports a provider that does not answer within the timeout as unavailable, maybe accepted', async () => {
      provider().post('/v1/tasks').delay(1_000).reply(202, { id: 'late', status: 'queued' });
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'unavailable', reason: 'no answer within 200 ms', maybeAccepted: true });
    });

    it('reports a connection reset as unavailable, maybe accepted', async () => {
      provider().post('/v1/tasks').replyWithError({ code: 'ECONNRESET', message: 'socket hang up' });
      expect(await client.submit(account, request)).to.deep.include({ kind: 'unavailable', maybeAccepted: true });
    });

    it('reports a refused connection as unavailable, surely not accepted', async () => {
      const closed = new HttpProviderAdapter({ baseUrl: `http://127.0.0.1:${await freePort()}`, submitTimeoutMs: 2000 });
      expect(await closed.submit(account, request)).to.deep.include({ kind: 'unavailable', maybeAccepted: false });
    });

    it('reports an answer cut off before its end as unavailable, maybe accepted', async () => {
      const server = http.createServer((_request, response) => {
        response.writeHead(202, { 'content-type': 'application/json', 'content-length': '100' });
        response.write('{"id":"ta');
        setTimeout(() => response.socket?.destroy(), 20);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const cut = new HttpProviderAdapter({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, submitTimeoutMs: 2000 });
        expect(await cut.submit(account, request)).to.deep.equal({ kind: 'unavailable', reason: 'network error: ECONNRESET', maybeAccepted: true });
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('reports a 202 without a task id as unavailable, maybe accepted', async () => {
      provider().post('/v1/tasks').reply(202, { status: 'queued' });
      expect(await client.submit(account, request)).to.deep.equal({ kind: 'unavailable', reason: 'accepted without a task id', maybeAccepted: true });
    });
  });

  describe('findTask', () => {
    const lookup = () => provider().get('/v1/tasks').query({ client_reference: 'generation-1' });

    it('answers the task the provider keeps under the client reference', async () => {
      lookup().reply(200, { data: [{ id: 'task-1', client_reference: 'generation-1', status: 'running' }] });
      expect(await client.findTask(account, 'generation-1')).to.deep.equal({ kind: 'found', taskId: 'task-1' });
    });

    it('answers absent when the provider has none', async () => {
      lookup().reply(200, { data: [] });
      expect(await client.findTask(account, 'generation-1')).to.deep.equal({ kind: 'absent' });
    });

    it('answers unavailable on a 5xx, a timeout or an answer it cannot read: never absent by mistake', async () => {
      lookup().reply(503, 'busy');
      expect(await client.findTask(account, 'generation-1')).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 503' });
      lookup().delay(1_000).reply(200, { data: [] });
      expect(await client.findTask(account, 'generation-1')).to.deep.equal({ kind: 'unavailable', reason: 'no answer within 200 ms' });
      lookup().reply(200, { tasks: [] });
      expect(await client.findTask(account, 'generation-1')).to.deep.include({ kind: 'unavailable' });
    });
  });

  describe('poll', () => {
    const task = (body: object) => provider().get('/v1/tasks/task%2F1').reply(200, { id: 'task/1', result: null, error: null, ...body });

    for (const status of ['queued', 'running']) {
      it(`reports a ${status} task as running`, async () => {
        task({ status });
        expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'running' });
      });
    }

    it('returns the result url of a succeeded task', async () => {
      task({ status: 'succeeded', result: { url: 'http://cdn.test/r.png', content_type: 'image/png' } });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'succeeded', resultUrl: 'http://cdn.test/r.png' });
    });

    it('returns a null result url for a task that succeeded without a result', async () => {
      task({ status: 'succeeded', result: null });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'succeeded', resultUrl: null });
    });

    it('maps a failed task of error type safety to safety', async () => {
      task({ status: 'failed', error: { type: 'safety', message: 'refused' } });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'failed', errorCode: 'safety', message: 'refused' });
    });

    it('maps the error types internal_error and provider_error to provider_error', async () => {
      task({ status: 'failed', error: { type: 'internal_error', message: 'boom' } });
      task({ status: 'failed', error: { type: 'provider_error', message: 'boom' } });
      expect(await client.poll(account, 'task/1')).to.deep.include({ errorCode: 'provider_error' });
      expect(await client.poll(account, 'task/1')).to.deep.include({ errorCode: 'provider_error' });
    });

    it('maps a failed task of error type bad_input_image to bad_input_image', async () => {
      task({ status: 'failed', error: { type: 'bad_input_image', message: 'no face' } });
      expect(await client.poll(account, 'task/1')).to.deep.include({ kind: 'failed', errorCode: 'bad_input_image' });
    });

    it('passes an unknown error type through as the error code', async () => {
      task({ status: 'failed', error: { type: 'face_not_found', message: 'no face' } });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'failed', errorCode: 'face_not_found', message: 'no face' });
    });

    it('maps a failed task without an error type to provider_error', async () => {
      task({ status: 'failed', error: null });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'failed', errorCode: 'provider_error', message: null });
    });

    it('fails the task with lost_account when the key is refused', async () => {
      provider().get('/v1/tasks/task%2F1').reply(401, { error: { type: 'unauthorized' } });
      expect(await client.poll(account, 'task/1')).to.deep.include({ kind: 'failed', errorCode: 'lost_account' });
    });

    it('fails a task the provider no longer knows with provider_error', async () => {
      provider().get('/v1/tasks/task%2F1').reply(404, { error: { type: 'not_found' } });
      expect(await client.poll(account, 'task/1')).to.deep.include({ kind: 'failed', errorCode: 'provider_error' });
    });

    it('reports 5xx, 429 and an unknown task status as unavailable', async () => {
      provider().get('/v1/tasks/task%2F1').reply(502, 'bad gateway');
      provider().get('/v1/tasks/task%2F1').reply(429, {});
      task({ status: 'paused' });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 502' });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'unavailable', reason: 'HTTP 429' });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'unavailable', reason: 'unknown task status "paused"' });
    });

    it('reports a poll that times out as unavailable', async () => {
      provider().get('/v1/tasks/task%2F1').delay(1_000).reply(200, { status: 'running' });
      expect(await client.poll(account, 'task/1')).to.deep.equal({ kind: 'unavailable', reason: 'no answer within 200 ms' });
    });
  });

  describe('stageFile', () => {
    const photo = { body: Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]), contentType: 'image/jpeg' };
    const staged = { id: 'file-1', url: `${BASE}/v1/files/file-1`, expires_at: '2030-01-01T00:00:00.000Z' };

    it('POSTs the photo bytes with their media type and the account key, and answers the link and its expiry', async () => {
      nock(BASE, { reqheaders: { authorization: 'Bearer key-1', 'content-type': 'image/jpeg' } })
        .post('/v1/files', (body: string) => Buffer.from(body, 'hex').equals(photo.body))
        .reply(201, staged);
      expect(await client.stageFile(account, photo)).to.deep.equal({ kind: 'staged', url: staged.url, expiresAt: new Date(staged.expires_at) });
    });

    it('answers unavailable, never a link, for a refusal, a 5xx, a timeout or an answer without a link or expiry', async () => {
      provider().post('/v1/files').reply(401, { error: { type: 'unauthorized' } });
      provider().post('/v1/files').reply(503, 'busy');
      provider().post('/v1/files').delay(1_000).reply(201, staged);
      provider().post('/v1/files').reply(201, { ...staged, url: 'ftp://provider.test/file-1' });
      provider().post('/v1/files').reply(201, { ...staged, expires_at: 'soon' });
      const outcomes = [];
      for (let i = 0; i < 5; i += 1) outcomes.push(await client.stageFile(account, photo));
      expect(outcomes).to.deep.equal([
        { kind: 'unavailable', reason: 'HTTP 401' },
        { kind: 'unavailable', reason: 'HTTP 503' },
        { kind: 'unavailable', reason: 'no answer within 200 ms' },
        { kind: 'unavailable', reason: 'staged without a file link' },
        { kind: 'unavailable', reason: 'staged without an expiry' },
      ]);
    });
  });

  describe('fetchResult', () => {
    it('downloads the result bytes with their media type', async () => {
      const bytes = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
      nock('http://cdn.test').get('/r.png').reply(200, bytes, { 'Content-Type': 'Image/PNG; charset=binary' });
      expect(await client.fetchResult('http://cdn.test/r.png')).to.deep.equal({ body: bytes, contentType: 'image/png' });
    });

    it('throws when the result link answers an error', async () => {
      nock('http://cdn.test').get('/gone.png').reply(404, 'gone');
      const error = await client.fetchResult('http://cdn.test/gone.png').then(() => null, (caught: Error) => caught);
      expect(error?.message).to.equal('result download answered HTTP 404');
    });

    it('refuses a result above its size limit as too large, without keeping it whole', async () => {
      const small = new HttpProviderAdapter({ baseUrl: BASE, resultMaxBytes: 4 });
      nock('http://cdn.test').get('/big.png').reply(200, Buffer.alloc(5), { 'Content-Type': 'image/png' });
      const error = await small.fetchResult('http://cdn.test/big.png').then(() => null, (caught: Error) => caught);
      expect(error).to.be.instanceOf(ResultTooLargeError);
      nock('http://cdn.test').get('/fits.png').reply(200, Buffer.alloc(4), { 'Content-Type': 'image/png' });
      expect((await small.fetchResult('http://cdn.test/fits.png')).body).to.have.length(4);
    });

    it('throws when the download does not finish within the timeout', async () => {
      nock('http://cdn.test').get('/slow.mp4').delay(1_000).reply(200, 'bytes');
      const error = await client.fetchResult('http://cdn.test/slow.mp4').then(() => null, (caught: Error) => caught);
      expect(error?.name).to.equal('TimeoutError');
    });
  });
});
