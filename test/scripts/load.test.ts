import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { runLoad } from '../../scripts/load';

/** A server answering each path as the load generator must read it; it records what it received. */
async function answeringServer(): Promise<{ url: string; received: string[]; close: () => Promise<void> }> {
  const received: string[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      received.push(`${request.method} ${request.url} ${request.headers['x-probe'] ?? ''} ${body}`);
      if (request.url === '/big') {
        // Sent in two writes, so the answer reaches the client in more than one read.
        response.writeHead(200, { 'Content-Length': String(200_000) });
        response.write(Buffer.alloc(100_000, 'a'));
        setTimeout(() => response.end(Buffer.alloc(100_000, 'b')), 5);
      } else if (request.url === '/not-modified') {
        response.writeHead(304).end();
      } else if (request.url === '/closing') {
        response.writeHead(200, { 'Content-Length': '2', Connection: 'close' }).end('ok');
      } else if (request.url === '/chunked') {
        response.writeHead(200).write('no length');
        response.end();
      } else {
        response.writeHead(request.url === '/missing' ? 404 : 200, { 'Content-Length': '4' }).end('body');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('load generator (scripts/load.ts)', () => {
  const quick = { concurrency: 2, durationMs: 300, warmupMs: 0 };

  for (const path of ['/small', '/big', '/not-modified', '/closing']) {
    it(`reads whole answers back to back: ${path}`, async () => {
      const server = await answeringServer();
      try {
        const result = await runLoad(server.url, () => ({ path }), quick);
        expect(result.errors).to.equal(0);
        expect(result.requests).to.be.greaterThan(2);
        expect(server.received.length).to.be.at.least(result.requests);
      } finally {
        await server.close();
      }
    });
  }

  it('sends the method, headers and body it is given, and counts an answer of 400 or more as an error', async () => {
    const server = await answeringServer();
    try {
      const posted = await runLoad(server.url, (index) => ({ method: 'POST', path: '/small', headers: { 'x-probe': `p${index}` }, body: `{"n":${index}}` }), { ...quick, concurrency: 1 });
      expect(posted.errors).to.equal(0);
      expect(server.received.slice(0, 2)).to.deep.equal(['POST /small p0 {"n":0}', 'POST /small p1 {"n":1}']);
      const missing = await runLoad(server.url, () => ({ path: '/missing' }), quick);
      expect(missing.requests).to.equal(0);
      expect(missing.errors).to.be.greaterThan(2);
    } finally {
      await server.close();
    }
  });

  it('counts an answer without Content-Length as an error rather than guessing where it ends', async () => {
    const server = await answeringServer();
    try {
      const result = await runLoad(server.url, () => ({ path: '/chunked' }), quick);
      expect(result.requests).to.equal(0);
      expect(result.errors).to.be.greaterThan(0);
    } finally {
      await server.close();
    }
  });
});
