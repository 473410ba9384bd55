import { expect } from 'chai';
import { expireGuests, startGuestExpiry } from '../../../workers/accounts/expire-guests';
import { guest, newDeviceId, registered } from '../../accounts';
import { resetDatabase, services, startTestApp, useTestApp } from '../../harness';
import { eventually } from '../../../scripts/wait';

const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000);

describe('guest expiry job', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  async function ageUser(userId: string, days: number): Promise<void> {
    await services().db('users').where({ id: userId }).update({ last_sign_in_at: daysAgo(days) });
  }

  async function putFiles(userId: string): Promise<string[]> {
    const keys = [`uploads/${userId}/photo.jpg`, `results/${userId}/result.jpg`, `avatars/${userId}/a.jpg`];
    for (const key of keys) await services().storage.put(key, Buffer.from('x'), 'image/jpeg');
    return keys;
  }

  it('deletes guests with no sign-in for more than 30 days, with their files; keeps recent guests and full accounts', async () => {
    const oldDevice = newDeviceId();
    const old = await guest(t.api, oldDevice);
    const recent = await guest(t.api);
    const full = await registered(t.api);
    await ageUser(old.body.user.id, 31);
    await ageUser(recent.body.user.id, 29);
    await ageUser(full.body.user.id, 400);
    const oldFiles = await putFiles(old.body.user.id);
    const recentFiles = await putFiles(recent.body.user.id);

    expect(await expireGuests(services())).to.equal(1);

    const remaining = (await services().db('users').select('id')).map((row) => row.id).sort();
    expect(remaining).to.deep.equal([recent.body.user.id, full.body.user.id].sort());
    for (const key of oldFiles) expect(await services().storage.stat(key), key).to.equal(null);
    for (const key of recentFiles) expect(await services().storage.stat(key), key).not.to.equal(null);

    const again = await guest(t.api, oldDevice);
    expect(again.body.user.id).not.to.equal(old.body.user.id);
    expect(again.body.user.balance, 'the device keeps its start-credit mark').to.equal(0);
  });

  it('counts a token refresh as a sign-in, so an active guest is kept', async () => {
    const active = await guest(t.api);
    await ageUser(active.body.user.id, 31);
    expect((await t.api.post('/v1/auth/refresh', { refresh_token: active.body.refresh_token })).status).to.equal(200);
    expect(await expireGuests(services())).to.equal(0);
  });

  it('keeps a guest that signed in or registered while its files were being erased', async () => {
    const signsIn = await guest(t.api);
    const registers = await guest(t.api);
    await ageUser(signsIn.body.user.id, 31);
    await ageUser(registers.body.user.id, 31);
    const base = services();
    // A storage that lets both guests come back at the moment the job erases their files.
    const racingStorage = Object.create(base.storage, {
      removePrefix: {
        value: async (prefix: string) => {
          await base.db('users').where({ id: signsIn.body.user.id }).update({ last_sign_in_at: new Date() });
          await base.db('users').where({ id: registers.body.user.id }).update({ is_anonymous: false });
          return base.storage.removePrefix(prefix);
        },
      },
    });
    expect(await expireGuests({ ...base, storage: racingStorage })).to.equal(0);
    expect(await base.db('users').count('* as count').first()).to.deep.equal({ count: 2 });
  });

  it('works through more guests than one batch', async () => {
    const { db } = services();
    await db('users').insert(Array.from({ length: 110 }, () => ({ is_anonymous: true, last_sign_in_at: daysAgo(40) })));
    expect(await expireGuests(services())).to.equal(110);
  });

  it('honours GUEST_RETENTION_DAYS', async () => {
    const short = await startTestApp({ config: { GUEST_RETENTION_DAYS: '2' } });
    try {
      const first = await guest(t.api);
      await ageUser(first.body.user.id, 3);
      expect(await expireGuests(short.services)).to.equal(1);
    } finally {
      await short.close();
    }
  });

  it('is registered as an hourly cron job that does the work', async () => {
    const { boss } = services();
    const stale = await guest(t.api);
    await ageUser(stale.body.user.id, 31);
    const expiry = await startGuestExpiry(t.app.services);
    try {
      const schedules = await boss.getSchedules();
      expect(schedules.find((schedule) => schedule.name === 'expire-guests')?.cron).to.match(/^\d+ \* \* \* \*$/);
      await boss.send('expire-guests', {});
      await eventually(() => services().db('users').where({ id: stale.body.user.id }).first(), (row) => row === undefined, 8000).catch(() => undefined);
      expect(await services().db('users').where({ id: stale.body.user.id }).first()).to.equal(undefined);
    } finally {
      await expiry.stop();
      await boss.unschedule('expire-guests');
    }
  });
});
