import net from 'node:net';
import { expect } from 'chai';
import { useTestApp } from '../../harness';

/** Sends raw bytes and reads the whole answer until the server closes the connection. */
function rawExchange(url: string, request: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const [statusLine, ...headerLines] = head.split('\r\n');
      const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
    });
    socket.write(request);
  });
}

function expectEnvelope(answer: { status: number; headers: Record<string, string>; body: string }, status: number, code: string) {
  expect(answer.status, answer.body).to.equal(status);
  expect(answer.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
  expect(answer.headers['content-type']).to.contain('application/json');
  expect(JSON.parse(answer.body)).to.deep.equal({ error: { code, message: JSON.parse(answer.body).error.message } });
  expect(JSON.parse(answer.body).error.message).to.be.a('string').and.not.empty;
}

describe("Node's own HTTP errors in the envelope", () => {
  const t = useTestApp({ config: { REQUEST_TIMEOUT_MS: '600' } });

  it('a malformed header is 400 bad_request with X-Request-Id', async () => {
    expectEnvelope(await rawExchange(t.app.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'), 400, 'bad_request');
  });

  it('a 20 KB header is 431 headers_too_large', async () => {
    expectEnvelope(await rawExchange(t.app.url, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), 431, 'headers_too_large');
  });

  it('Content-Length: -1 is 400 bad_request', async () => {
    expectEnvelope(await rawExchange(t.app.url, 'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n{}'), 400, 'bad_request');
  });

  it('a request that does not arrive within REQUEST_TIMEOUT_MS is 408 request_timeout', async function () {
    this.timeout(15_000);
    expectEnvelope(await rawExchange(t.app.url, 'POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"em'), 408, 'request_timeout');
  });
});
