import { expect } from 'chai';
import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import * as Minio from 'minio';
import { signV4 } from 'minio/dist/main/signing.js';
import { services } from '../harness';
import { s3ErrorCode, submitToTicket } from '../../scripts/upload-ticket';

/**
 * The embedded object store behind its gateway (media/store-gateway/), as a client and as the
 * service's own minio client meet it: every request is checked as S3 checks it.
 */

function settings() {
  return services().storage.settings;
}

/** A minio client of this store, with other credentials or dates when a test needs a forged one. */
function minioClient(secretKey = settings().secretKey, accessKey = settings().accessKey): Minio.Client {
  const url = new URL(settings().endpoint);
  return new Minio.Client({ endPoint: url.hostname, port: Number(url.port), useSSL: false, accessKey, secretKey, region: settings().region, pathStyle: true });
}

async function answer(response: Response): Promise<{ status: number; code: string | null }> {
  return { status: response.status, code: s3ErrorCode(await response.text()) };
}

function amzDate(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

/** A request signed in its Authorization header by the minio client's own signing code. */
async function headerSigned(method: string, path: string, body: Buffer | null, options: { date?: Date; signedHash?: string; secretKey?: string } = {}): Promise<Response> {
  const { endpoint, accessKey, secretKey, region } = settings();
  const date = options.date ?? new Date();
  const hash = options.signedHash ?? createHash('sha256').update(body ?? Buffer.alloc(0)).digest('hex');
  const headers: Record<string, string> = { host: new URL(endpoint).host, 'x-amz-date': amzDate(date), 'x-amz-content-sha256': hash };
  headers.authorization = signV4({ protocol: 'http:', method, path, headers } as Parameters<typeof signV4>[0], accessKey, options.secretKey ?? secretKey, region, date, hash);
  delete headers.host;
  return fetch(`${endpoint}${path}`, { method, headers, body });
}

/** A request with a path exactly as given (fetch would resolve `..`). */
function rawGet(path: string): Promise<{ status: number; code: string | null }> {
  const url = new URL(settings().endpoint);
  return new Promise((resolve, reject) => {
    http.get({ hostname: url.hostname, port: url.port, path }, (response) => {
      let text = '';
      response.on('data', (chunk) => { text += chunk; });
      response.on('end', () => resolve({ status: response.statusCode!, code: s3ErrorCode(text) }));
    }).on('error', reject);
  });
}

/** A form POST of a ticket's fields and a file, as the bytes of one HTTP/1.1 request. */
function formRequest(ticket: { url: string; fields: Record<string, string> }, file: Buffer): Buffer {
  const boundary = `gateway-test-${randomUUID()}`;
  const fields = Object.entries(ticket.fields).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
  const body = Buffer.concat([
    Buffer.from(`${fields.join('')}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="photo"\r\nContent-Type: image/jpeg\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const url = new URL(ticket.url);
  const head = `POST ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${body.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), body]);
}

/**
 * Sends each request on ONE connection, the next once the answer before it has arrived whole
 * (framed by its Content-Length); answers each answer's status and S3 error code.
 */
function onOneConnection(address: string, requests: Buffer[]): Promise<{ status: number; code: string | null }[]> {
  const url = new URL(address);
  return new Promise((resolve, reject) => {
    const answers: { status: number; code: string | null }[] = [];
    let received = Buffer.alloc(0);
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(requests[0]));
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const headEnd = received.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = received.subarray(0, headEnd).toString('latin1');
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (received.length < headEnd + 4 + length) return;
      answers.push({ status: Number(head.slice(9, 12)), code: s3ErrorCode(received.subarray(headEnd + 4, headEnd + 4 + length).toString()) });
      received = received.subarray(headEnd + 4 + length);
      if (answers.length === requests.length) {
        socket.end();
        resolve(answers);
      } else socket.write(requests[answers.length]);
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`the connection closed after ${answers.length} answers`)));
  });
}

const key = 'uploads/gateway-test/photo.jpg';
const bytes = Buffer.from('the original bytes');

describe('the embedded object store checks what S3 checks', () => {
  beforeEach(() => services().storage.put(key, bytes, 'image/jpeg'));

  it('refuses unsigned reads, writes, deletes and lists with 403 AccessDenied in S3 XML', async () => {
    const { endpoint, bucket } = settings();
    const read = await fetch(`${endpoint}/${bucket}/${key}`);
    expect(read.status).to.equal(403);
    expect(read.headers.get('content-type')).to.equal('application/xml');
    expect(s3ErrorCode(await read.text())).to.equal('AccessDenied');
    expect(await answer(await fetch(`${endpoint}/${bucket}/${key}`, { method: 'PUT', body: 'overwritten' }))).to.deep.equal({ status: 403, code: 'AccessDenied' });
    expect(await answer(await fetch(`${endpoint}/${bucket}/${key}`, { method: 'DELETE' }))).to.deep.equal({ status: 403, code: 'AccessDenied' });
    expect(await answer(await fetch(`${endpoint}/${bucket}?list-type=2`))).to.deep.equal({ status: 403, code: 'AccessDenied' });
    expect(await answer(await fetch(`${endpoint}/`))).to.deep.equal({ status: 403, code: 'AccessDenied' });
    expect((await services().storage.get(key)).equals(bytes)).to.equal(true);
  });

  it('serves a presigned GET, and refuses it once expired, tampered, moved to another key or signed with another secret', async () => {
    const { bucket } = settings();
    const link = await services().storage.presignedGet(key, 60);
    const served = await fetch(link);
    expect(served.status).to.equal(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).to.equal(true);

    const expired = await minioClient().presignedGetObject(bucket, key, 60, {}, new Date(Date.now() - 120_000));
    expect(await answer(await fetch(expired))).to.deep.equal({ status: 403, code: 'AccessDenied' });
    const signature = new URL(link).searchParams.get('X-Amz-Signature')!;
    const tampered = link.replace(signature, `${signature.slice(0, -1)}${signature.endsWith('0') ? '1' : '0'}`);
    expect(await answer(await fetch(tampered))).to.deep.equal({ status: 403, code: 'SignatureDoesNotMatch' });
    await services().storage.put('uploads/gateway-test/other.jpg', Buffer.from('another'), 'image/jpeg');
    expect(await answer(await fetch(link.replace('photo.jpg', 'other.jpg')))).to.deep.equal({ status: 403, code: 'SignatureDoesNotMatch' });
    const forged = await minioClient('not-the-store-secret').presignedGetObject(bucket, key, 60);
    expect(await answer(await fetch(forged))).to.deep.equal({ status: 403, code: 'SignatureDoesNotMatch' });
    expect(await answer(await fetch(link, { method: 'DELETE' }))).to.deep.equal({ status: 403, code: 'SignatureDoesNotMatch' });
  });

  it('stores through a presigned PUT, and refuses one for another key or carrying an unsigned x-amz-copy-source', async () => {
    const { bucket } = settings();
    const link = await minioClient().presignedPutObject(bucket, 'uploads/gateway-test/put.jpg', 60);
    expect((await fetch(link, { method: 'PUT', body: 'put through a link', headers: { 'Content-Type': 'image/jpeg' } })).status).to.equal(200);
    expect((await services().storage.get('uploads/gateway-test/put.jpg')).toString()).to.equal('put through a link');
    expect(await answer(await fetch(link.replace('put.jpg', 'photo.jpg'), { method: 'PUT', body: 'x' }))).to.deep.equal({ status: 403, code: 'SignatureDoesNotMatch' });
    // Real S3 would copy another object into the link's key with the signer's rights.
    const copy = await fetch(link, { method: 'PUT', headers: { 'x-amz-copy-source': `/${bucket}/${key}` } });
    expect(await answer(copy)).to.deep.equal({ status: 403, code: 'AccessDenied' });
  });

  it("checks the service's own header-signed requests: another secret, an unknown key, a body that is not the signed one, an old date", async () => {
    const { bucket } = settings();
    const path = `/${bucket}/uploads/gateway-test/signed.txt`;
    expect((await headerSigned('PUT', path, Buffer.from('signed'))).status).to.equal(200);
    expect((await services().storage.get('uploads/gateway-test/signed.txt')).toString()).to.equal('signed');

    expect(await answer(await headerSigned('PUT', path, Buffer.from('forged'), { secretKey: 'not-the-store-secret' }))).to.deep.equal({ status: 403, code: 'SignatureDoesNotMatch' });
    const signedHash = createHash('sha256').update('signed').digest('hex');
    expect(await answer(await headerSigned('PUT', path, Buffer.from('swapped'), { signedHash }))).to.deep.equal({ status: 400, code: 'XAmzContentSHA256Mismatch' });
    expect(await answer(await headerSigned('GET', path, null, { date: new Date(Date.now() - 20 * 60_000) }))).to.deep.equal({ status: 403, code: 'RequestTimeTooSkewed' });
    expect((await services().storage.get('uploads/gateway-test/signed.txt')).toString()).to.equal('signed');

    const stranger = await minioClient(settings().secretKey, 'SOMEONE-ELSE').presignedGetObject(bucket, key, 60);
    expect(await answer(await fetch(stranger))).to.deep.equal({ status: 403, code: 'InvalidAccessKeyId' });
  });

  it('serves avatars and catalog images unsigned (GET, HEAD), and nothing that climbs out of their folders', async () => {
    const { endpoint, bucket } = settings();
    await services().storage.put('avatars/someone/face.jpg', Buffer.from('a face'), 'image/jpeg');
    const avatar = await fetch(services().storage.publicUrl('avatars/someone/face.jpg'));
    expect(avatar.status).to.equal(200);
    expect(await avatar.text()).to.equal('a face');
    expect((await fetch(`${endpoint}/${bucket}/avatars/someone/face.jpg`, { method: 'HEAD' })).status).to.equal(200);
    expect(await answer(await fetch(`${endpoint}/${bucket}/avatars/someone/face.jpg`, { method: 'PUT', body: 'x' }))).to.deep.equal({ status: 403, code: 'AccessDenied' });
    expect(await rawGet(`/${bucket}/avatars/../${key}`)).to.deep.equal({ status: 400, code: 'InvalidURI' });
    expect(await rawGet(`/${bucket}/avatars/%2e%2e/${key}`)).to.deep.equal({ status: 400, code: 'InvalidURI' });
    expect(await rawGet(`/${bucket}/avatars%2F..%2F${key.replaceAll('/', '%2F')}`)).to.deep.equal({ status: 400, code: 'InvalidURI' });
  });

  it('describes an object as it is now after it is replaced, copied over or deleted, also once the store keeps what it read of it', async () => {
    const { storage } = services();
    // The store keeps an object's description once it has stayed unchanged for a second.
    const settled = () => new Promise((resolve) => setTimeout(resolve, 1100));
    const objectKey = `results/gateway-test/${randomUUID()}.jpg`;
    await storage.put(objectKey, Buffer.from('first'), 'image/jpeg');
    await settled();
    expect(await storage.stat(objectKey)).to.deep.equal({ size: 5, contentType: 'image/jpeg', viaItsTicket: false });
    expect(await storage.stat(objectKey)).to.deep.equal({ size: 5, contentType: 'image/jpeg', viaItsTicket: false });

    await storage.put(objectKey, Buffer.from('the second'), 'image/png');
    expect(await storage.stat(objectKey)).to.deep.equal({ size: 10, contentType: 'image/png', viaItsTicket: false });
    expect((await minioClient().statObject(settings().bucket, objectKey)).etag).to.equal(createHash('md5').update('the second').digest('hex'));
    expect((await storage.get(objectKey)).toString()).to.equal('the second');

    const source = `results/gateway-test/${randomUUID()}.webp`;
    await storage.put(source, Buffer.from('copied over it'), 'image/webp');
    await settled();
    expect(await storage.stat(objectKey)).to.deep.equal({ size: 10, contentType: 'image/png', viaItsTicket: false });
    await minioClient().copyObject(settings().bucket, objectKey, `/${settings().bucket}/${source}`, new Minio.CopyConditions());
    expect(await storage.stat(objectKey)).to.deep.equal({ size: 14, contentType: 'image/webp', viaItsTicket: false });
    expect((await storage.readHead(objectKey, 6))?.head.toString()).to.equal('copied');

    for (let round = 1; round <= 6; round += 1) {
      const body = Buffer.alloc(round * 100, round);
      const [, , read] = await Promise.all([storage.stat(objectKey), storage.put(objectKey, body, 'image/jpeg'), storage.stat(objectKey)]);
      expect([14, (round - 1) * 100, round * 100]).to.include(read?.size);
      expect(await storage.stat(objectKey), `round ${round}`).to.deep.equal({ size: round * 100, contentType: 'image/jpeg', viaItsTicket: false });
      expect((await storage.get(objectKey)).equals(body)).to.equal(true);
    }

    await settled();
    expect((await storage.stat(objectKey))?.size).to.equal(600);
    await storage.remove(objectKey);
    expect(await storage.stat(objectKey)).to.equal(null);
    expect(await storage.readHead(objectKey, 10)).to.equal(null);
  });

  describe('upload forms (POST policy)', () => {
    let formKey: string;
    beforeEach(() => { formKey = `uploads/gateway-test/${randomUUID()}.jpg`; });

    async function ticket(objectKey: string, options: { maxBytes?: number; expiresInSeconds?: number } = {}) {
      return services().storage.presignedPost(objectKey, { contentType: 'image/jpeg', maxBytes: options.maxBytes ?? 1024, expiresInSeconds: options.expiresInSeconds ?? 60 });
    }

    it("stores the file under the ticket's key with the ticket's type and stamp (204)", async () => {
      const form = await ticket(formKey);
      expect(await submitToTicket(form, Buffer.from('from a form'), 'image/jpeg')).to.deep.equal({ status: 204, code: null });
      expect(await services().storage.stat(formKey)).to.deep.equal({ size: 11, contentType: 'image/jpeg', viaItsTicket: true });
    });

    it('reads what stat tells and the first bytes in one ranged GET: the whole size of a longer file, a shorter one whole, none for a missing key, and an empty one from S3\'s refusal of its range', async () => {
      const { storage } = services();
      const file = Buffer.from(Array.from({ length: 1000 }, (_, index) => index % 251));
      const form = await ticket(formKey, { maxBytes: 2048 });
      expect((await submitToTicket(form, file, 'image/jpeg')).status).to.equal(204);
      const read = await storage.readHead(formKey, 100);
      expect(read?.object).to.deep.equal(await storage.stat(formKey));
      expect(read?.object).to.deep.equal({ size: 1000, contentType: 'image/jpeg', viaItsTicket: true });
      expect(read?.head.equals(file.subarray(0, 100))).to.equal(true);
      expect((await storage.readHead(formKey, 4096))?.head.equals(file)).to.equal(true);

      expect(await storage.readHead(`uploads/gateway-test/${randomUUID()}.jpg`, 100)).to.equal(null);

      // An empty object (no ticket makes one: a form takes 1 byte at least): S3 answers a range over
      // it with 416 InvalidRange, which s3rver never does (it leaves the request unanswered), so the
      // client is given S3's answer here and the object is looked at with a HEAD.
      const empty = `uploads/gateway-test/${randomUUID()}.jpg`;
      await storage.put(empty, Buffer.alloc(0), 'image/jpeg');
      const overEmpty = Object.create(storage) as typeof storage;
      const client = Object.create((storage as unknown as { client: Minio.Client }).client) as Minio.Client;
      client.getPartialObject = () => Promise.reject(Object.assign(new Error('The requested range is not satisfiable'), { code: 'InvalidRange' }));
      Object.defineProperty(overEmpty, 'client', { value: client });
      expect(await overEmpty.readHead(empty, 100)).to.deep.equal({ object: { size: 0, contentType: 'image/jpeg', viaItsTicket: false }, head: Buffer.alloc(0) });
    });

    it('answers a form or a PUT once the file holds every byte: a read right after it sees the whole object', async () => {
      const { storage } = services();
      const size = 12 * 1024 * 1024;
      for (let round = 1; round <= 3; round += 1) {
        const file = Buffer.alloc(size, round);
        expect((await submitToTicket(await ticket(formKey, { maxBytes: 16 * 1024 * 1024 }), file, 'image/jpeg')).status).to.equal(204);
        expect((await storage.readHead(formKey, 16))?.object.size, `form, round ${round}`).to.equal(size);
        const putKey = `results/gateway-test/${randomUUID()}.jpg`;
        await storage.put(putKey, file, 'image/jpeg');
        expect((await storage.stat(putKey))?.size, `PUT, round ${round}`).to.equal(size);
        await storage.remove(putKey);
      }
    });

    it('refuses a swapped key or content type, an extra or repeated field, and a form without a policy (AccessDenied)', async () => {
      const form = await ticket(formKey);
      const file = Buffer.from('from a form');
      expect(await submitToTicket({ ...form, fields: { ...form.fields, key } }, file, 'image/jpeg')).to.deep.equal({ status: 403, code: 'AccessDenied' });
      expect(await submitToTicket({ ...form, fields: { ...form.fields, 'Content-Type': 'text/html' } }, file, 'text/html')).to.deep.equal({ status: 403, code: 'AccessDenied' });
      expect(await submitToTicket({ ...form, fields: { ...form.fields, 'x-amz-meta-extra': 'mine' } }, file, 'image/jpeg')).to.deep.equal({ status: 403, code: 'AccessDenied' });
      expect(await submitToTicket({ ...form, fields: { key: formKey, 'Content-Type': 'image/jpeg' } }, file, 'image/jpeg')).to.deep.equal({ status: 403, code: 'AccessDenied' });

      const repeated = new FormData();
      for (const [name, value] of Object.entries(form.fields)) repeated.append(name, value);
      repeated.append('key', key);
      repeated.append('file', new Blob([file]), 'photo');
      expect(await answer(await fetch(form.url, { method: 'POST', body: repeated }))).to.deep.equal({ status: 400, code: 'InvalidArgument' });
      expect(await services().storage.stat(formKey)).to.equal(null);
      expect((await services().storage.get(key)).equals(bytes)).to.equal(true);
    });

    it('refuses a file outside content-length-range (EntityTooLarge, EntityTooSmall)', async () => {
      const form = await ticket(formKey, { maxBytes: 1024 });
      expect(await submitToTicket(form, Buffer.alloc(1025, 1), 'image/jpeg')).to.deep.equal({ status: 400, code: 'EntityTooLarge' });
      expect(await submitToTicket(form, Buffer.alloc(0), 'image/jpeg')).to.deep.equal({ status: 400, code: 'EntityTooSmall' });
      expect(await submitToTicket(form, Buffer.alloc(1024, 1), 'image/jpeg')).to.deep.equal({ status: 204, code: null });
    });

    it('reads the rest of a refused form, so the refusal arrives and the connection carries the next request', async () => {
      const form = await ticket(formKey, { maxBytes: 1024 });
      const answers = await onOneConnection(settings().endpoint, [formRequest(form, Buffer.alloc(8 * 1024 * 1024, 1)), formRequest(form, Buffer.alloc(1024, 1))]);
      expect(answers).to.deep.equal([{ status: 400, code: 'EntityTooLarge' }, { status: 204, code: null }]);
    });

    it('refuses an expired policy (AccessDenied) and a policy changed after signing (SignatureDoesNotMatch)', async () => {
      const expired = await ticket(formKey, { expiresInSeconds: -60 });
      expect(await submitToTicket(expired, Buffer.from('late'), 'image/jpeg')).to.deep.equal({ status: 403, code: 'AccessDenied' });
      const form = await ticket(formKey, { maxBytes: 1024 });
      const policy = Buffer.from(form.fields.policy, 'base64').toString().replace('1024', '99999999');
      const widened = { ...form, fields: { ...form.fields, policy: Buffer.from(policy).toString('base64') } };
      expect(await submitToTicket(widened, Buffer.alloc(2048, 1), 'image/jpeg')).to.deep.equal({ status: 403, code: 'SignatureDoesNotMatch' });
      expect(await services().storage.stat(formKey)).to.equal(null);
    });
  });
});

