import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { AnswerTooLargeError, download, exchange, NoAnswerError } from '../../clients/outbound-http';
import { freePort } from '../harness';

describe('one outbound HTTP exchange (the pool\'s, the payment processor client\'s and the simulators\' calls)', () => {
  let server: http.Server;
  let base: string;
  before(async () => {
    server = http.createServer((request, response) => {
      if (request.url === '/declared') {
        response.writeHead(200, { 'content-length': '2048' });
        return response.end(Buffer.alloc(2048));
      }
      if (request.url === '/chunked') {
        response.writeHead(200);
        response.write(Buffer.alloc(600));
        return setTimeout(() => response.end(Buffer.alloc(600)), 10);
      }
      if (request.url === '/silent') return;
      const hop = /^\/hop\/(\d+)$/.exec(request.url ?? '');
      if (hop) {
        const left = Number(hop[1]);
        response.writeHead(left === 0 ? 200 : 302, left === 0 ? {} : { location: `/hop/${left - 1}` });
        return response.end(left === 0 ? 'arrived' : '');
      }
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        response.writeHead(201, { 'content-type': 'application/json', 'retry-after': '3' });
        response.end(JSON.stringify({ method: request.method, body, length: request.headers['content-length'] ?? null }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const failure = (call: Promise<unknown>) => call.then(() => null, (error: unknown) => error as NoAnswerError);

  it('sends the body with its length and answers the status, the headers and the whole body', async () => {
    const answer = await exchange(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"é":1}', timeoutMs: 2000 });
    expect(answer.status).to.equal(201);
    expect(answer.headers['retry-after']).to.equal('3');
    expect(JSON.parse(answer.body.toString())).to.deep.equal({ method: 'POST', body: '{"é":1}', length: '8' });
  });

  it('refuses an answer above maxBytes, by its declared length or as it grows', async () => {
    for (const path of ['/declared', '/chunked']) {
      const error = await failure(exchange(`${base}${path}`, { method: 'GET', timeoutMs: 2000, maxBytes: 1000 }));
      expect(error, path).to.be.instanceOf(AnswerTooLargeError).and.to.be.instanceOf(NoAnswerError);
      expect(error!.message, path).to.equal('the answer is larger than 1000 bytes');
    }
    expect((await exchange(`${base}/chunked`, { method: 'GET', timeoutMs: 2000, maxBytes: 1200 })).body).to.have.length(1200);
  });

  it('times out as a TimeoutError that may have been sent', async () => {
    const error = await failure(exchange(`${base}/silent`, { method: 'GET', timeoutMs: 100 }));
    expect(error).to.include({ name: 'TimeoutError', message: 'no answer within 100 ms', sent: true, timedOut: true });
  });

  it('ends at once when its signal aborts, or before it starts when it already has', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    const error = await failure(exchange(`${base}/silent`, { method: 'GET', timeoutMs: 5000, signal: controller.signal }));
    expect(error).to.include({ message: 'network error: ABORTED', timedOut: false });
    expect(Date.now() - started).to.be.below(1000);
    expect(await failure(exchange(`${base}/echo`, { method: 'GET', timeoutMs: 5000, signal: controller.signal }))).to.include({ message: 'network error: ABORTED' });
  });

  it('says a refused connection was surely not sent', async () => {
    const error = await failure(exchange(`http://127.0.0.1:${await freePort()}/`, { method: 'GET', timeoutMs: 2000 }));
    expect(error).to.include({ message: 'network error: ECONNREFUSED', sent: false, timedOut: false });
  });

  it('downloads through up to five redirects; the sixth is answered as it is, and an API call follows none', async () => {
    const arrived = await download(`${base}/hop/5`, { timeoutMs: 2000 });
    expect([arrived.status, arrived.body.toString()]).to.deep.equal([200, 'arrived']);
    expect((await download(`${base}/hop/6`, { timeoutMs: 2000 })).status).to.equal(302);
    expect((await exchange(`${base}/hop/1`, { method: 'GET', timeoutMs: 2000 })).status).to.equal(302);
  });

  it('refuses a link that is not http or https, or no link at all, without calling anything', async () => {
    expect(await failure(download('file:///etc/passwd', { timeoutMs: 2000 }))).to.include({ message: 'network error: no HTTP link (file:)', sent: false });
    expect(await failure(exchange('not a link', { method: 'GET', timeoutMs: 2000 }))).to.be.instanceOf(NoAnswerError).and.include({ message: 'network error: not a link', sent: false });
  });
});
