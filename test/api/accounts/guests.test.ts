import { expect } from 'chai';
import { expectError, expectLedgerConsistent, guest, newDeviceId, registered, transactionsOf } from '../../accounts';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, useTestApp } from '../../harness';

describe('guests: POST /v1/auth/anonymous', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());
  afterEach(() => expectLedgerConsistent());

  it('creates a guest on a new device with the start credits and a token pair', async () => {
    const answer = await guest(t.api);
    expect(answer.body).to.have.all.keys('access_token', 'refresh_token', 'expires_in', 'user');
    expect(answer.body.expires_in).to.equal(900);
    expect(answer.body.user).to.deep.include({ email: null, name: null, locale: 'ru', is_anonymous: true, providers: [], balance: 100, avatar_url: null });
    expect(await transactionsOf(answer.body.user.id)).to.deep.equal([{ kind: 'guest_start', amount: 100, reference: 'guest_start' }]);
    const me = await t.api.get('/v1/me', { token: answer.body.access_token });
    expect(me.body.id).to.equal(answer.body.user.id);
  });

  it('gives the same device the same guest and balance with a new pair and no new credits', async () => {
    const deviceId = newDeviceId();
    const first = await guest(t.api, deviceId);
    const second = await guest(t.api, deviceId);
    expect(second.body.user.id).to.equal(first.body.user.id);
    expect(second.body.user.balance).to.equal(100);
    expect(second.body.refresh_token).not.to.equal(first.body.refresh_token);
    expect(await transactionsOf(first.body.user.id)).to.have.length(1);
  });

  it('creates one guest for two simultaneous first requests from one device', async () => {
    const deviceId = newDeviceId();
    const answers = await Promise.all([1, 2, 3].map(() => t.api.post('/v1/auth/anonymous', { device_id: deviceId })));
    expect(new Set(answers.map((answer) => answer.body.user.id)).size).to.equal(1);
    expect(await services().db('users').count('* as count').first()).to.deep.equal({ count: 1 });
  });

  it('answers 403 forbidden on a device a full account signed in from, creating nothing', async () => {
    const deviceId = newDeviceId();
    await registered(t.api, { device_id: deviceId });
    expectError(await t.api.post('/v1/auth/anonymous', { device_id: deviceId }), 403, 'forbidden');
    expect(await services().db('users').where({ is_anonymous: true }).count('* as count').first()).to.deep.equal({ count: 0 });
  });

  it('answers 403 after the guest of the device became a full account', async () => {
    const deviceId = newDeviceId();
    const first = await guest(t.api, deviceId);
    await registered(t.api, {}, first.body.access_token);
    expectError(await t.api.post('/v1/auth/anonymous', { device_id: deviceId }), 403, 'forbidden');
  });

  it('never grants start credits twice to a device, even after its guest is deleted', async () => {
    const deviceId = newDeviceId();
    const first = await guest(t.api, deviceId);
    expect((await t.api.delete('/v1/me', { token: first.body.access_token })).status).to.equal(204);
    const second = await guest(t.api, deviceId);
    expect(second.body.user.id).not.to.equal(first.body.user.id);
    expect(second.body.user.balance).to.equal(0);
    expect(await transactionsOf(second.body.user.id)).to.deep.equal([]);
  });

  it('validates device_id: required, 1..255 characters; ref_code at most 32', async () => {
    for (const body of [{}, { device_id: '' }, { device_id: 'x'.repeat(256) }, { device_id: 42 }, { device_id: 'ok', ref_code: 'x'.repeat(33) }]) {
      const answer = await t.api.post('/v1/auth/anonymous', body);
      expectError(answer, 422, 'validation_error');
    }
    expect((await t.api.post('/v1/auth/anonymous', { device_id: 'x'.repeat(255) })).status).to.equal(200);
  });

  it('stores no device id in clear', async () => {
    const deviceId = newDeviceId();
    await guest(t.api, deviceId);
    const { rows } = await services().db.raw("select count(*)::integer as count from devices where device_hash like '%' || ? || '%'", [deviceId]);
    expect(rows[0].count).to.equal(0);
    expect(await services().db('devices').count('* as count').first()).to.deep.equal({ count: 1 });
  });

  it('uses GUEST_START_CREDITS from the config', async () => {
    const custom = await startTestApp({ config: { GUEST_START_CREDITS: '7' } });
    try {
      const answer = await guest(client(custom.url));
      expect(answer.body.user.balance).to.equal(7);
    } finally {
      await custom.close();
    }
  });
});
