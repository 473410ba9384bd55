import { expect } from 'chai';
import { completeReferral } from '../../../api/referrals/referrals';
import { expectError, expectLedgerConsistent, guest, newDeviceId, password, registered, transactionsOf, type Api } from '../../accounts';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, type TestApp } from '../../harness';
import { startFakeUserinfo, type FakeUserinfo } from '../identity/fake-providers';

describe('referrals', () => {
  let app: TestApp;
  let api: Api;
  let userinfo: FakeUserinfo;

  before(async () => {
    userinfo = await startFakeUserinfo();
    app = await startTestApp({
      config: { LINK_BASE: 'https://go.example.app', IDP_C_USERINFO_URL: `${userinfo.url}/me` },
    });
    api = client(app.url);
  });
  after(async () => {
    await app.close();
    await userinfo.close();
  });
  beforeEach(() => resetDatabase());
  afterEach(() => expectLedgerConsistent());

  async function inviter(): Promise<{ id: string; token: string; code: string }> {
    const account = await registered(api);
    const stats = await api.get('/v1/referral', { token: account.body.access_token });
    return { id: account.body.user.id, token: account.body.access_token, code: stats.body.code };
  }

  const statsOf = async (token: string) => (await api.get('/v1/referral', { token })).body;

  it('gives every account an 8-character code from creation and a share link on LINK_BASE', async () => {
    const account = await registered(api);
    const stats = await statsOf(account.body.access_token);
    expect(stats).to.deep.equal({ code: stats.code, link: `https://go.example.app/r/${stats.code}`, invited: 0, credited: 0, earned: 0 });
    expect(stats.code).to.match(/^[A-Z0-9]{8}$/);
    const first = await guest(api);
    const { referral_code: guestCode } = await services().db('users').where({ id: first.body.user.id }).first('referral_code');
    expect(guestCode).to.match(/^[A-Z0-9]{8}$/);
    const upgraded = await registered(api, {}, first.body.access_token);
    expect((await statsOf(upgraded.body.access_token)).code, 'the code exists from creation and stays').to.equal(guestCode);
  });

  it('rule 5: register with a code pays referral_bonus to the new user and referral_earned to the inviter', async () => {
    const host = await inviter();
    const invited = await registered(api, { ref_code: host.code });
    expect(invited.body.user.balance).to.equal(100);
    expect(await transactionsOf(invited.body.user.id)).to.deep.equal([
      { kind: 'welcome', amount: 50, reference: 'welcome' },
      { kind: 'referral_bonus', amount: 50, reference: `referral:${invited.body.user.id}` },
    ]);
    expect(await transactionsOf(host.id)).to.deep.include({ kind: 'referral_earned', amount: 50, reference: `referral:${invited.body.user.id}` });
    expect(await statsOf(host.token)).to.include({ invited: 1, credited: 1, earned: 50 });
    const history = await api.get('/v1/credits/transactions', { token: host.token });
    expect(history.body.items[0]).to.include({ kind: 'referral_earned', amount: 50 });
  });

  it('rule 5: payment is idempotent', async () => {
    const host = await inviter();
    const invited = await registered(api, { ref_code: host.code });
    await services().db.transaction((trx) => completeReferral(trx, invited.body.user.id, 50));
    await services().db('referrals').update({ paid_at: null });
    await services().db.transaction((trx) => completeReferral(trx, invited.body.user.id, 50));
    expect((await transactionsOf(host.id)).filter((row) => row.kind === 'referral_earned')).to.have.length(1);
    expect((await transactionsOf(invited.body.user.id)).filter((row) => row.kind === 'referral_bonus')).to.have.length(1);
  });

  it('accepts the code from a provider sign-in too, and in lower case', async () => {
    const host = await inviter();
    userinfo.profiles.set('tok-ref', { sub: 'ref-1' });
    const answer = await api.post('/v1/auth/idp_c', { access_token: 'tok-ref', ref_code: host.code.toLowerCase() });
    expect(answer.status).to.equal(200);
    expect(answer.body.user.balance).to.equal(100);
    expect(await statsOf(host.token)).to.include({ invited: 1, credited: 1, earned: 50 });
  });

  it('rule 2: an empty, unknown or own code is ignored without error', async () => {
    const plain = await registered(api, { ref_code: '' });
    const unknown = await registered(api, { ref_code: 'NOSUCH99' });
    expect(plain.body.user.balance).to.equal(50);
    expect(unknown.body.user.balance).to.equal(50);
    const first = await guest(api);
    const { referral_code: own } = await services().db('users').where({ id: first.body.user.id }).first('referral_code');
    const upgraded = await registered(api, { ref_code: own }, first.body.access_token);
    expect(upgraded.body.user.balance).to.equal(150);
    expect(await services().db('referrals').count('* as count').first()).to.deep.equal({ count: 0 });
  });

  it('rule 2: a code cannot be applied after registration (a later provider sign-in ignores it)', async () => {
    const host = await inviter();
    userinfo.profiles.set('tok-late', { sub: 'late-1' });
    await api.post('/v1/auth/idp_c', { access_token: 'tok-late' });
    const again = await api.post('/v1/auth/idp_c', { access_token: 'tok-late', ref_code: host.code });
    expect(again.body.user.balance).to.equal(50);
    expect(await statsOf(host.token)).to.include({ invited: 0, earned: 0 });
  });

  it('rule 3: a recorded inviter is never replaced by a later code', async () => {
    const first = await inviter();
    const second = await inviter();
    const visitor = await guest(api, newDeviceId(), first.code);
    await registered(api, { ref_code: second.code }, visitor.body.access_token);
    expect(await statsOf(first.token)).to.include({ invited: 1, credited: 1, earned: 50 });
    expect(await statsOf(second.token)).to.include({ invited: 0, credited: 0, earned: 0 });
  });

  it('rule 4: a guest by code is linked at once, and both bonuses are paid only at the upgrade', async () => {
    const host = await inviter();
    const visitor = await guest(api, newDeviceId(), host.code);
    expect(visitor.body.user.balance).to.equal(100);
    expect(await services().db('referrals').where({ invited_id: visitor.body.user.id }).first('inviter_id')).to.deep.equal({ inviter_id: host.id });
    expect(await statsOf(host.token)).to.include({ invited: 0, credited: 0, earned: 0 });
    const upgraded = await registered(api, {}, visitor.body.access_token);
    expect(upgraded.body.user.balance).to.equal(200);
    expect(await statsOf(host.token)).to.include({ invited: 1, credited: 1, earned: 50 });
  });

  it('rule 4: a guest created without a code passes ref_code to register', async () => {
    const host = await inviter();
    const visitor = await guest(api);
    const upgraded = await registered(api, { ref_code: host.code }, visitor.body.access_token);
    expect(upgraded.body.user.balance).to.equal(200);
    expect(await statsOf(host.token)).to.include({ invited: 1, credited: 1 });
  });

  it('rule 6: no bonus to either side when both signed in from one device; the link still counts as invited', async () => {
    const deviceId = newDeviceId();
    const host = await registered(api, { device_id: deviceId });
    const code = (await statsOf(host.body.access_token)).code;
    const invited = await registered(api, { ref_code: code, device_id: deviceId });
    expect(invited.body.user.balance).to.equal(50);
    expect(await statsOf(host.body.access_token)).to.include({ invited: 1, credited: 0, earned: 0 });
    expect(await transactionsOf(host.body.user.id)).to.deep.equal([{ kind: 'welcome', amount: 50, reference: 'welcome' }]);
  });

  it('rule 6: a device shared earlier counts too (the inviter logged in on the guest device before)', async () => {
    const guestDevice = newDeviceId();
    const host = await inviter();
    const visitor = await guest(api, guestDevice, host.code);
    const { email } = (await api.get('/v1/me', { token: host.token })).body;
    expect((await api.post('/v1/auth/login', { email, password, device_id: guestDevice })).status).to.equal(200);
    const upgraded = await registered(api, {}, visitor.body.access_token);
    expect(upgraded.body.user.balance).to.equal(150);
    expect(await statsOf(host.token)).to.include({ invited: 1, credited: 0, earned: 0 });
  });

  it('rule 7: GET /v1/referral answers a guest 403 registration_required and needs a token', async () => {
    const visitor = await guest(api);
    expectError(await api.get('/v1/referral', { token: visitor.body.access_token }), 403, 'registration_required');
    expectError(await api.get('/v1/referral'), 401, 'auth_required');
  });

  it('keeps counting a paid invitation after the invited account is deleted', async () => {
    const host = await inviter();
    const invited = await registered(api, { ref_code: host.code });
    await api.delete('/v1/me', { token: invited.body.access_token });
    expect(await statsOf(host.token)).to.include({ invited: 1, credited: 1, earned: 50 });
  });

  describe('the invitation page GET /r/<code>', () => {
    it('answers an HTML page naming a known code', async () => {
      const host = await inviter();
      const response = await fetch(`${app.url}/r/${host.code}`);
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.match(/^text\/html/);
      const html = await response.text();
      expect(html).to.contain(host.code).and.contain('<html');
    });

    it('answers 404 with a page for an unknown code, escaping what was sent', async () => {
      const response = await fetch(`${app.url}/r/${encodeURIComponent('<script>x</script>')}`);
      expect(response.status).to.equal(404);
      expect(await response.text()).not.to.contain('<script>');
    });

    it('answers 404 with the page for a code with U+0000 in it, not a 500', async () => {
      const response = await fetch(`${app.url}/r/AB%00CD`);
      expect(response.status).to.equal(404);
      expect(response.headers.get('content-type')).to.match(/^text\/html/);
    });
  });
});
