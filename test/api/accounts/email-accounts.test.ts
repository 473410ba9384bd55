import { expect } from 'chai';
import { expectError, expectLedgerConsistent, guest, newDeviceId, newEmail, password, registered, transactionsOf } from '../../accounts';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';

describe('email accounts: register and login', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());
  afterEach(() => expectLedgerConsistent());

  describe('POST /v1/auth/register', () => {
    it('answers 201 with a full account, welcome credits and a pair', async () => {
      const email = newEmail();
      const answer = await registered(t.api, { email, name: 'Anna' });
      expect(answer.body.user).to.deep.include({ email, name: 'Anna', is_anonymous: false, providers: ['email'], balance: 50 });
      expect(answer.body.expires_in).to.equal(900);
      expect(await transactionsOf(answer.body.user.id)).to.deep.equal([{ kind: 'welcome', amount: 50, reference: 'welcome' }]);
    });

    it('stores an argon2id hash (m >= 19 MiB, t >= 2, p = 1), never the password', async () => {
      const answer = await registered(t.api);
      const { password_hash: hash } = await services().db('users').where({ id: answer.body.user.id }).first('password_hash');
      const [, algorithm, , parameters] = hash.split('$');
      expect(algorithm).to.equal('argon2id');
      const values = Object.fromEntries(parameters.split(',').map((pair: string) => pair.split('=')).map(([key, value]: string[]) => [key, Number(value)]));
      expect(values.m).to.be.at.least(19 * 1024);
      expect(values.t).to.be.at.least(2);
      expect(values.p).to.equal(1);
      expect(hash).not.to.contain(password);
    });

    it('answers 409 email_taken for an occupied email, case-insensitively', async () => {
      const email = newEmail();
      await registered(t.api, { email });
      expectError(await t.api.post('/v1/auth/register', { email: email.toUpperCase(), password }), 409, 'email_taken');
    });

    it('makes only one account of two simultaneous registrations of one email', async () => {
      const email = newEmail();
      const answers = await Promise.all([1, 2, 3].map(() => t.api.post('/v1/auth/register', { email, password })));
      expect(answers.map((answer) => answer.status).sort()).to.deep.equal([201, 409, 409]);
    });

    it('names password in details when it is shorter than 8 or longer than 128 characters', async () => {
      for (const bad of ['short', 'x'.repeat(129)]) {
        const answer = await t.api.post('/v1/auth/register', { email: newEmail(), password: bad });
        expectError(answer, 422, 'validation_error');
        expect(answer.body.error.details.map((detail: { loc: string[] }) => detail.loc)).to.deep.equal([['body', 'password']]);
        expect(answer.text).not.to.contain(bad);
      }
      expect((await t.api.post('/v1/auth/register', { email: newEmail(), password: 'x'.repeat(128) })).status).to.equal(201);
      expect((await t.api.post('/v1/auth/register', { email: newEmail(), password: 'x'.repeat(8) })).status).to.equal(201);
    });

    it('checks the email format and the name length', async () => {
      for (const body of [{ email: 'not-an-email', password }, { password }, { email: newEmail(), password, name: 'n'.repeat(121) }]) {
        expectError(await t.api.post('/v1/auth/register', body), 422, 'validation_error');
      }
      expect((await t.api.post('/v1/auth/register', { email: newEmail(), password, name: 'n'.repeat(120) })).status).to.equal(201);
    });

    it('validates before checking the email: a taken email with a bad password is 422', async () => {
      const email = newEmail();
      await registered(t.api, { email });
      expectError(await t.api.post('/v1/auth/register', { email, password: 'short' }), 422, 'validation_error');
    });

    it('rejects a broken or expired token with 401 instead of making a second account', async () => {
      expectError(await t.api.post('/v1/auth/register', { email: newEmail(), password }, { token: 'broken' }), 401, 'auth_required');
      expect(await services().db('users').count('* as count').first()).to.deep.equal({ count: 0 });
    });
  });

  describe('guest upgrade by register', () => {
    it('keeps the id and the balance, adds welcome credits on top, and the old access token keeps working', async () => {
      const first = await guest(t.api);
      const { id } = first.body.user;
      const answer = await registered(t.api, { name: 'Former Guest' }, first.body.access_token);
      expect(answer.body.user).to.deep.include({ id, is_anonymous: false, balance: 150, name: 'Former Guest', providers: ['email'] });
      expect((await transactionsOf(id)).map((row) => row.kind)).to.deep.equal(['guest_start', 'welcome']);
      const me = await t.api.get('/v1/me', { token: first.body.access_token });
      expect(me.body).to.include({ id, is_anonymous: false });
      expect(await services().db('users').count('* as count').first()).to.deep.equal({ count: 1 });
    });

    it('leaves the guest and its tokens valid on 409 email_taken', async () => {
      const email = newEmail();
      await registered(t.api, { email });
      const first = await guest(t.api);
      expectError(await t.api.post('/v1/auth/register', { email, password }, { token: first.body.access_token }), 409, 'email_taken');
      const me = await t.api.get('/v1/me', { token: first.body.access_token });
      expect(me.body).to.include({ id: first.body.user.id, is_anonymous: true, balance: 100 });
      const refreshed = await t.api.post('/v1/auth/refresh', { refresh_token: first.body.refresh_token });
      expect(refreshed.status).to.equal(200);
      expect(refreshed.body.user.is_anonymous).to.equal(true);
    });

    it("ignores a full account's token: register makes a separate account", async () => {
      const first = await registered(t.api);
      const second = await registered(t.api, {}, first.body.access_token);
      expect(second.body.user.id).not.to.equal(first.body.user.id);
    });
  });

  describe('POST /v1/auth/login', () => {
    it('answers 200 with the account and a new pair', async () => {
      const email = newEmail();
      const account = await registered(t.api, { email });
      const answer = await t.api.post('/v1/auth/login', { email: email.toUpperCase(), password, device_id: newDeviceId() });
      expect(answer.status).to.equal(200);
      expect(answer.body.user).to.deep.include({ id: account.body.user.id, balance: 50 });
      expect(answer.body.refresh_token).not.to.equal(account.body.refresh_token);
    });

    it('answers 401 invalid_credentials for a wrong password and for an unknown email alike', async () => {
      const email = newEmail();
      await registered(t.api, { email });
      const wrong = await t.api.post('/v1/auth/login', { email, password: 'wrong password' });
      const unknown = await t.api.post('/v1/auth/login', { email: newEmail(), password });
      expectError(wrong, 401, 'invalid_credentials');
      expectError(unknown, 401, 'invalid_credentials');
      expect(wrong.body).to.deep.equal(unknown.body);
    });

    it('answers 401 for an account made by a provider, which has no password', async () => {
      const email = newEmail();
      await makeUser({ email });
      expectError(await t.api.post('/v1/auth/login', { email, password }), 401, 'invalid_credentials');
    });

    it('signs a guest in to the existing account without moving the guest balance', async () => {
      const email = newEmail();
      const account = await registered(t.api, { email });
      const first = await guest(t.api);
      const answer = await t.api.post('/v1/auth/login', { email, password }, { token: first.body.access_token });
      expect(answer.body.user).to.deep.include({ id: account.body.user.id, balance: 50 });
      const stillGuest = await t.api.get('/v1/me', { token: first.body.access_token });
      expect(stillGuest.body).to.include({ is_anonymous: true, balance: 100 });
    });

    it('answers 422 for a missing field or an over-long password', async () => {
      expectError(await t.api.post('/v1/auth/login', { email: newEmail() }), 422, 'validation_error');
      expectError(await t.api.post('/v1/auth/login', { email: newEmail(), password: 'x'.repeat(129) }), 422, 'validation_error');
    });
  });
});
