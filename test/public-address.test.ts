import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { renderUnicodeCompact } from 'uqr';
import { guest, registered } from './accounts';
import { client } from './client';
import { photo } from './generation-fixtures';
import { freePort } from './harness';
import { postToTicket, s3ErrorCode, submitToTicket } from '../scripts/upload-ticket';
import { eventually } from '../scripts/wait';

/** Every string in an answer that is an absolute http(s) address. */
function linksIn(value: unknown): string[] {
  if (typeof value === 'string') return /^https?:\/\//.test(value) ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(linksIn);
  if (value && typeof value === 'object') return Object.values(value).flatMap(linksIn);
  return [];
}

function answersOn(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, host);
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

describe('the service bound to and announced at another address (HOST, PUBLIC_BASE_URL)', function () {
  this.timeout(180_000);
  let dataDir: string;
  let child: ChildProcess | null = null;

  before(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'effects-address-'));
    chmodSync(dataDir, 0o755);
  });
  after(async () => {
    if (child && child.exitCode === null) {
      await new Promise((resolve) => { child!.once('exit', resolve); child!.kill('SIGTERM'); });
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs the whole photo flow at 127.0.0.2 (LAN mode): every link points there, the start prints it with its QR code, and nothing of ours answers on 127.0.0.1', async () => {
    const [port, storePort, postgresPort] = [await freePort(), await freePort(), await freePort()];
    const base = `http://127.0.0.2:${port}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env, DATA_DIR: dataDir, PORT: String(port), EMBEDDED_PG_PORT: String(postgresPort), EMBEDDED_S3_PORT: String(storePort),
      HOST: '127.0.0.2', PUBLIC_BASE_URL: base, SIM_PROVIDER_LATENCY_MS: '100', LOG_LEVEL: 'info',
      // What a terminal shows (its QR code is for a person), on the test's pipe.
      LOG_FORMAT: 'pretty',
    };
    for (const name of Object.keys(env)) if (/^(DATABASE_URL|S3_|PROVIDER_URL|LINK_BASE|PROVIDER_CALLBACK_BASE_URL)/.test(name)) delete env[name];
    // LAN mode, announced at 127.0.0.2 instead of this machine's LAN address (tests reach only loopback).
    child = spawn(process.execPath, [path.join(__dirname, '..', 'main.js'), 'all', '--lan'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => { output += chunk.toString(); });
    await eventually(() => fetch(`${base}/readyz`).then((response) => response.status, () => 0), (status) => status === 200, 120_000, 250);

    const api = client(base);
    const user = (await guest(api)).body;
    const token = user.access_token as string;
    const effects = await api.get('/v1/effects?limit=50', { token });
    const effect = effects.body.items.find((item: { slug: string }) => item.slug === 'winter-portrait');
    const ticket = await api.post('/v1/uploads', { content_type: 'image/jpeg' }, { token });
    expect(ticket.body.url).to.equal(`${base}/media`);
    expect(await postToTicket(ticket.body, await photo(), 'image/jpeg')).to.equal(204);
    const tooLarge = (await api.post('/v1/uploads', { content_type: 'image/jpeg' }, { token })).body;
    expect(await submitToTicket(tooLarge, Buffer.alloc(16 * 1024 * 1024, 5), 'image/jpeg')).to.deep.equal({ status: 400, code: 'EntityTooLarge' });
    const created = await api.post('/v1/generations', { effect_id: effect.id, characters: [[ticket.body.id]] }, { token });
    expect(created.status, created.text).to.equal(202);
    const done = await eventually(() => api.get(`/v1/generations/${created.body.id}`, { token }), (answer) => ['succeeded', 'failed'].includes(answer.body.status), 60_000, 200);
    expect(done.body.status, done.text).to.equal('succeeded');
    for (const link of [done.body.result_url, done.body.preview.thumb]) {
      expect(link.startsWith(`${base}/media/`), link).to.equal(true);
      const download = await fetch(link);
      expect(download.status, link).to.equal(200);
      expect(download.headers.get('content-type'), link).to.match(/^image\//);
      expect((await download.arrayBuffer()).byteLength).to.be.above(0);
    }
    // Through the web origin the store still checks signatures.
    const unsigned = await fetch(done.body.result_url.split('?')[0]);
    expect(unsigned.status).to.equal(403);
    expect(s3ErrorCode(await unsigned.text())).to.equal('AccessDenied');

    const buyer = (await registered(api)).body.access_token as string;
    const products = await api.get('/v1/payments/products', { token: buyer });
    const payment = await api.post('/v1/payments', { product_id: products.body.items[0].id, method: 'card' }, { token: buyer });
    expect(payment.status, payment.text).to.equal(201);
    expect((await fetch(payment.body.payment_url)).status).to.equal(200);
    const referral = await api.get('/v1/referral', { token: buyer });

    const links = [effects, ticket, done, payment, referral, await api.get('/v1/me', { token: buyer })].flatMap((answer) => linksIn(answer.body));
    expect(links.length).to.be.above(10);
    expect(links.filter((link) => !link.startsWith(`${base}/`))).to.deep.equal([]);

    expect(await answersOn('127.0.0.2', port)).to.equal(true);
    expect(await answersOn('127.0.0.2', storePort)).to.equal(true);
    expect(await answersOn('127.0.0.1', port), 'the web port on 127.0.0.1').to.equal(false);
    expect(await answersOn('127.0.0.1', storePort), 'the store on 127.0.0.1').to.equal(false);
    expect(output).to.contain(`\nAPI: ${base} (every path starts with /v1)\n`);
    expect(output).to.contain(`\nPhone on the same network: ${base}\n${renderUnicodeCompact(base).trimEnd()}\nAndroid emulator: http://10.0.2.2:${port}   iOS simulator: http://localhost:${port}\n`);
    // A pretty line ends with its fields as one JSON object.
    const store = output.split('\n').find((line) => / WARN: EMBEDDED OBJECT STORE /.test(line))!;
    expect(JSON.parse(/\{[^{]*\}$/.exec(store)![0])).to.deep.equal({ endpoint: `http://127.0.0.2:${storePort}`, publicUrl: base });
  });
});
