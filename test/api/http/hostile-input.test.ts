import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { insertDemoEffects, photo, storedUpload, type DemoSlug } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser, type TestUser } from '../../users';
import type { Answer } from '../../client';

const NUL = '\u0000';

/** A 422 that names the field at `loc` and says nothing of what was sent. */
function expectFieldRefused(answer: Answer, loc: (string | number)[], sent?: string) {
  expect(answer.status, answer.text).to.equal(422);
  expect(answer.body.error.code).to.equal('validation_error');
  expect(answer.body.error.details.map((detail: { loc: unknown[] }) => detail.loc)).to.deep.include(loc);
  if (sent) expect(answer.text).not.to.contain(sent);
}

/** `depth` arrays inside each other: `[[[...]]]`, about two bytes a level. */
function nested(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

describe('hostile input', () => {
  const t = useTestApp({ config: { RATE_AUTH_BURST: '10000', RATE_WRITE_BURST: '10000', RATE_READ_BURST: '10000' } });
  let effects: Record<DemoSlug, string>;
  let user: TestUser;
  let upload: string;
  beforeEach(async () => {
    await resetDatabase();
    effects = await insertDemoEffects();
    user = await makeUser({ email: 'person@example.com', balance: 100, ageDays: 30 });
    upload = await storedUpload(user.id, await photo());
  });

  describe('1. a NUL character anywhere', () => {
    it('in a body field is a 422 naming the field, on every endpoint that takes text', async () => {
      const guestDevice = { device_id: `device${NUL}x` };
      expectFieldRefused(await t.api.patch('/v1/me', { name: `Ann${NUL}` }, { token: user.token }), ['body', 'name']);
      expectFieldRefused(await t.api.post('/v1/auth/login', { email: `a${NUL}@example.com`, password: 'whatever-1' }), ['body', 'email']);
      expectFieldRefused(await t.api.post('/v1/auth/anonymous', guestDevice), ['body', 'device_id']);
      expectFieldRefused(await t.api.post('/v1/auth/anonymous', { device_id: 'device-1', ref_code: `R${NUL}` }), ['body', 'ref_code']);
      expectFieldRefused(await t.api.post('/v1/auth/register', { email: 'new@example.com', password: 'long-enough-1', name: `N${NUL}` }), ['body', 'name']);
      expectFieldRefused(await t.api.post('/v1/auth/register', { email: 'new@example.com', password: 'long-enough-1', ref_code: `R${NUL}` }), ['body', 'ref_code']);
      expectFieldRefused(await t.api.post('/v1/generations', { effect_id: `winter${NUL}`, characters: [[upload]] }, { token: user.token }), ['body', 'effect_id']);
      expectFieldRefused(await t.api.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: [[`${upload}${NUL}`]] }, { token: user.token }), ['body', 'characters', 0, 0]);
      expectFieldRefused(await t.api.post(`/v1/effects/${effects['winter-portrait']}/complaints`, { reason: 'other', note: `bad${NUL}` }, { token: user.token }), ['body', 'note']);
      expectFieldRefused(await t.api.post('/v1/auth/refresh', { refresh_token: `x${NUL}` }), ['body', 'refresh_token']);
    });

    it('in a query filter is a 422 naming the parameter', async () => {
      expectFieldRefused(await t.api.get('/v1/effects?tag=%00'), ['query', 'tag']);
      expectFieldRefused(await t.api.get('/v1/effects?category=%00'), ['query', 'category']);
      expectFieldRefused(await t.api.get('/v1/effects?search=a%00b'), ['query', 'search']);
    });

    it('in a path identifier is a 404', async () => {
      for (const path of ['/v1/effects/%00', '/v1/effects/winter%00portrait', '/v1/authors/%00']) {
        const answer = await t.api.get(path);
        expect(answer.status, `${path}: ${answer.text}`).to.equal(404);
        expect(answer.body.error.code).to.equal('not_found');
      }
      const complaint = await t.api.post('/v1/effects/%00/complaints', { reason: 'other' }, { token: user.token });
      expect(complaint.status, complaint.text).to.equal(404);
    });

    it('in a field the route does not read is ignored, like any unknown field', async () => {
      const answer = await t.api.patch('/v1/me', { name: 'Ann', nickname: `x${NUL}` }, { token: user.token });
      expect(answer.status, answer.text).to.equal(200);
    });
  });

  describe('2. deep nesting', () => {
    it('an unknown field nested 5,000 levels deep is a 422, with and without an Idempotency-Key', async () => {
      const raw = `{"effect_id":"${effects['winter-portrait']}","characters":[["${upload}"]],"extra":${nested(5000)}}`;
      for (const headers of [{}, { 'Idempotency-Key': 'deep-nesting-key-0001' }] as Record<string, string>[]) {
        const answer = await t.api.request('POST', '/v1/generations', undefined, { token: user.token, raw, headers });
        expect(answer.status, answer.text).to.equal(422);
        expect(answer.body.error.details).to.deep.equal([{ loc: ['body'], msg: 'nested deeper than 32 levels', type: 'json_too_deep' }]);
      }
      expect(await services().db('generations').count<{ count: number }[]>('* as count')).to.deep.equal([{ count: 0 }]);
    });

    it('a body as deep as the JSON limit allows (half a million levels) is a 422 too', async () => {
      const answer = await t.api.request('POST', '/v1/auth/login', undefined, { raw: `{"email":${nested(500_000)}}` });
      expect(answer.status, answer.text.slice(0, 200)).to.equal(422);
    });

    it('a body 32 levels deep is still read', async () => {
      const raw = `{"name":"Deep","extra":${nested(30)}}`;
      const answer = await t.api.request('PATCH', '/v1/me', undefined, { token: user.token, raw });
      expect(answer.status, answer.text).to.equal(200);
    });
  });

  describe('3. uuid formats Postgres would refuse', () => {
    const id = '123e4567-e89b-42d3-a456-426614174000';
    it('product_id as urn:uuid:, in braces or without hyphens is a 422 naming it', async () => {
      for (const productId of [`urn:uuid:${id}`, `{${id}}`, id.replace(/-/g, ''), `${id}\n`]) {
        expectFieldRefused(await t.api.post('/v1/payments', { product_id: productId, method: 'card' }, { token: user.token }), ['body', 'product_id']);
      }
    });
    it('a payment id in the path as urn:uuid: is a 422 (contract: id not a UUID), not a 500', async () => {
      const answer = await t.api.get(`/v1/payments/urn:uuid:${id}`, { token: user.token });
      expectFieldRefused(answer, ['path', 'id']);
    });
    it('other ids in a path in a form Postgres does not take name nothing: 404', async () => {
      for (const path of [`/v1/generations/urn:uuid:${id}`, `/v1/uploads/urn:uuid:${id}`, `/v1/effects/urn:uuid:${id}`, `/v1/authors/urn:uuid:${id}`]) {
        const answer = await t.api.get(path, { token: user.token });
        expect(answer.status, `${path}: ${answer.text}`).to.equal(404);
      }
    });
  });

  describe('5. a 422 stays small', () => {
    it('120,000 bad items in characters: a few details per field, an answer far smaller than the request', async () => {
      const body = { effect_id: effects['winter-portrait'], characters: Array.from({ length: 120_000 }, () => 'abcd') };
      const request = JSON.stringify(body);
      const answer = await t.api.post('/v1/generations', body, { token: user.token });
      expect(answer.status).to.equal(422);
      expect(answer.body.error.details.length).to.be.at.most(20);
      const perField = new Map<string, number>();
      for (const detail of answer.body.error.details as { loc: (string | number)[] }[]) {
        const field = detail.loc.filter((part) => typeof part === 'string').join('.');
        perField.set(field, (perField.get(field) ?? 0) + 1);
      }
      expect(Math.max(...perField.values())).to.be.at.most(3);
      expect(answer.text.length).to.be.below(request.length / 50);
    });

    it('says how many problems it left out', async () => {
      const answer = await t.api.post('/v1/generations', { effect_id: effects['winter-portrait'], characters: Array.from({ length: 4 }, () => 'abcd') }, { token: user.token });
      expect(answer.status).to.equal(422);
      expect(answer.body.error.details).to.have.length(3);
      expect(answer.body.error.message).to.match(/1 more problem not listed/);
    });
  });

  describe('9. contract details of POST /v1/generations', () => {
    it('422 characters_required carries details naming characters', async () => {
      const other = await storedUpload(user.id, await photo());
      const answer = await t.api.post('/v1/generations', { effect_id: effects['family-trio'], upload_id: upload, additional_uploads: [other] }, { token: user.token });
      expect(answer.status).to.equal(422);
      expect(answer.body.error.code).to.equal('characters_required');
      expect(answer.body.error.details).to.deep.equal([{ loc: ['body', 'characters'], msg: 'this effect takes several people: send the photos of each in characters', type: 'characters_required' }]);
    });

    it('a repeated upload_id in the flat list is not refused: the list counts as sent', async () => {
      const answer = await t.api.post('/v1/generations', { effect_id: effects['royal-couple'], upload_id: upload, additional_uploads: [upload] }, { token: user.token });
      expect(answer.status, answer.text).to.equal(202);
      const row = await services().db('generations').where({ id: answer.body.id }).first('inputs');
      expect(row.inputs.map((input: { upload_id: string; person: number }) => [input.upload_id, input.person])).to.deep.equal([[upload, 0], [upload, 1]]);
    });
  });
});

describe('hostile headers that reach SQL', () => {
  const t = useTestApp({ config: { TRUST_PROXY: '1' } });
  beforeEach(() => resetDatabase());

  it('an X-Forwarded-For that is no address, long or with odd characters, is still a request source: no 500', async () => {
    // Random text does not compress: a key this long does not fit a btree index row.
    for (const forwarded of [randomBytes(4000).toString('hex'), 'a'.repeat(8000), 'not an address', '999.1.1.1', "'; drop table users; --", '::ffff:zz']) {
      for (const path of ['/v1/auth/login', '/v1/auth/register', '/v1/auth/anonymous', '/v1/auth/refresh']) {
        const answer = await t.api.post(path, { email: 'x@example.com', password: 'long-enough-1', device_id: 'd-1', refresh_token: 'r' }, { headers: { 'X-Forwarded-For': forwarded } });
        expect(answer.status, `${path} ${forwarded.slice(0, 20)}: ${answer.text}`).to.be.below(500);
      }
    }
  });
});
