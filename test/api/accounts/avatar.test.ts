import { expect } from 'chai';
import sharp from 'sharp';
import { expectError, guest, registered } from '../../accounts';
import { client } from '../../client';
import { resetDatabase, services, startTestApp, useTestApp } from '../../harness';
import { postToTicket, submitToTicket } from '../../../scripts/upload-ticket';

/** A JPEG carrying EXIF with GPS coordinates and a marker text. */
async function jpegWithGps(): Promise<Buffer> {
  return sharp({ create: { width: 64, height: 48, channels: 3, background: '#c04030' } })
    .jpeg()
    .withExif({
      IFD0: { Copyright: 'exif-marker-1234', Orientation: '1' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '55/1 45/1 0/1', GPSLongitudeRef: 'E', GPSLongitude: '37/1 37/1 0/1' },
    })
    .toBuffer();
}

describe('avatar', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  async function ticketFor(token: string, contentType = 'image/jpeg') {
    const answer = await t.api.post('/v1/me/avatar/upload-url', { content_type: contentType }, { token });
    expect(answer.status, answer.text).to.equal(200);
    return answer.body;
  }

  it('gives an upload ticket for avatars/<user_id>/<uuid>.<ext>, valid 600 s', async () => {
    const account = await registered(t.api);
    const { id } = account.body.user;
    for (const [contentType, extension] of [['image/jpeg', 'jpg'], ['image/png', 'png'], ['image/webp', 'webp']]) {
      const ticket = await ticketFor(account.body.access_token, contentType);
      expect(ticket).to.have.all.keys('url', 'fields', 'object_key', 'expires_in');
      expect(ticket.expires_in).to.equal(600);
      expect(ticket.object_key).to.match(new RegExp(`^avatars/${id}/[0-9a-f-]{36}\\.${extension}$`));
      expect(ticket.fields.key).to.equal(ticket.object_key);
    }
  });

  it('refuses another content type with 422', async () => {
    const account = await registered(t.api);
    expectError(await t.api.post('/v1/me/avatar/upload-url', { content_type: 'image/gif' }, { token: account.body.access_token }), 422, 'validation_error');
  });

  it('binds an uploaded photo, re-encoded to JPEG without EXIF or GPS under the same key, publicly readable', async () => {
    const account = await registered(t.api);
    const token = account.body.access_token;
    const ticket = await ticketFor(token);
    expect(await postToTicket(ticket, await jpegWithGps(), 'image/jpeg')).to.be.within(200, 299);
    const answer = await t.api.put('/v1/me/avatar', { object_key: ticket.object_key }, { token });
    expect(answer.status, answer.text).to.equal(200);
    expect(answer.body.avatar_url).to.equal(services().storage.publicUrl(ticket.object_key));
    const served = Buffer.from(await (await fetch(answer.body.avatar_url)).arrayBuffer());
    const metadata = await sharp(served).metadata();
    expect(metadata.format).to.equal('jpeg');
    expect(metadata.exif).to.equal(undefined);
    expect(served.includes('exif-marker-1234')).to.equal(false);
    expect((await t.api.get('/v1/me', { token })).body.avatar_url).to.equal(answer.body.avatar_url);
  });

  it('re-encodes a PNG to JPEG under its .png key', async () => {
    const account = await registered(t.api);
    const token = account.body.access_token;
    const ticket = await ticketFor(token, 'image/png');
    const png = await sharp({ create: { width: 16, height: 16, channels: 4, background: { r: 0, g: 0, b: 255, alpha: 0.5 } } }).png().toBuffer();
    await postToTicket(ticket, png, 'image/png');
    expect((await t.api.put('/v1/me/avatar', { object_key: ticket.object_key }, { token })).status).to.equal(200);
    expect((await sharp(await services().storage.get(ticket.object_key)).metadata()).format).to.equal('jpeg');
  });

  it("answers 403 forbidden for a key outside the caller's own avatars/ folder", async () => {
    const account = await registered(t.api);
    const other = await registered(t.api);
    const token = account.body.access_token;
    const foreign = `avatars/${other.body.user.id}/x.jpg`;
    await services().storage.put(foreign, await jpegWithGps(), 'image/jpeg');
    for (const key of [foreign, `uploads/${account.body.user.id}/x.jpg`, `avatars/${account.body.user.id}/../${other.body.user.id}/x.jpg`, `avatars/${account.body.user.id}/`]) {
      expectError(await t.api.put('/v1/me/avatar', { object_key: key }, { token }), 403, 'forbidden');
    }
  });

  it('answers 422 naming object_key when nothing was uploaded, the file is not an image, or it is too large', async () => {
    const account = await registered(t.api);
    const token = account.body.access_token;
    const { id } = account.body.user;
    const missing = await t.api.put('/v1/me/avatar', { object_key: `avatars/${id}/missing.jpg` }, { token });
    expectError(missing, 422, 'validation_error');
    expect(missing.body.error.details[0].loc).to.deep.equal(['body', 'object_key']);

    const text = await ticketFor(token);
    await postToTicket(text, Buffer.from('just some text, not a picture'), 'image/jpeg');
    expectError(await t.api.put('/v1/me/avatar', { object_key: text.object_key }, { token }), 422, 'validation_error');

    const gif = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } }).gif().toBuffer();
    const animated = await ticketFor(token);
    await postToTicket(animated, gif, 'image/jpeg');
    expectError(await t.api.put('/v1/me/avatar', { object_key: animated.object_key }, { token }), 422, 'validation_error');

    const small = await startTestApp({ config: { AVATAR_MAX_BYTES: '1024' } });
    try {
      const big = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#888' } }).png({ compressionLevel: 0 }).toBuffer();
      const ticket = (await client(small.url).post('/v1/me/avatar/upload-url', { content_type: 'image/png' }, { token })).body;
      await postToTicket(ticket, big, 'image/png');
      expectError(await client(small.url).put('/v1/me/avatar', { object_key: ticket.object_key }, { token }), 422, 'validation_error');
    } finally {
      await small.close();
    }
    expect((await t.api.get('/v1/me', { token })).body.avatar_url).to.equal(null);
  });

  it("refuses (403 AccessDenied) a file sent with another user's avatar key swapped into the ticket", async () => {
    const victim = await registered(t.api);
    const attacker = await registered(t.api);
    const victimTicket = await ticketFor(victim.body.access_token);
    const attackerTicket = await ticketFor(attacker.body.access_token);
    const sent = await submitToTicket({ ...attackerTicket, fields: { ...attackerTicket.fields, key: victimTicket.object_key } }, await jpegWithGps(), 'image/jpeg');
    expect(sent).to.deep.equal({ status: 403, code: 'AccessDenied' });
    expect(await services().storage.stat(victimTicket.object_key)).to.equal(null);
  });

  it('refuses (400 EntityTooLarge) a 12 MB avatar: the ticket allows AVATAR_MAX_BYTES (10 MB)', async () => {
    const account = await registered(t.api);
    const ticket = await ticketFor(account.body.access_token);
    expect(await submitToTicket(ticket, Buffer.alloc(12 * 1024 * 1024, 3), 'image/jpeg')).to.deep.equal({ status: 400, code: 'EntityTooLarge' });
    expect(await services().storage.stat(ticket.object_key)).to.equal(null);
  });

  it('binds only an object that came through its own ticket (for a store that would not check the policy)', async () => {
    const account = await registered(t.api);
    const ticket = await ticketFor(account.body.access_token);
    await services().storage.put(ticket.object_key, await jpegWithGps(), 'image/jpeg');
    const bound = await t.api.put('/v1/me/avatar', { object_key: ticket.object_key }, { token: account.body.access_token });
    expectError(bound, 422, 'validation_error');
    expect(bound.body.error.details).to.deep.equal([{ loc: ['body', 'object_key'], msg: 'the file under this key was not put there through its upload ticket', type: 'object_not_via_ticket' }]);
  });

  it('removes the previous avatar file when a new one is bound, and DELETE clears it', async () => {
    const account = await registered(t.api);
    const token = account.body.access_token;
    const first = await ticketFor(token);
    await postToTicket(first, await jpegWithGps(), 'image/jpeg');
    await t.api.put('/v1/me/avatar', { object_key: first.object_key }, { token });
    const second = await ticketFor(token);
    await postToTicket(second, await jpegWithGps(), 'image/jpeg');
    await t.api.put('/v1/me/avatar', { object_key: second.object_key }, { token });
    expect(await services().storage.stat(first.object_key)).to.equal(null);

    const cleared = await t.api.delete('/v1/me/avatar', { token });
    expect(cleared.status).to.equal(200);
    expect(cleared.body.avatar_url).to.equal(null);
    expect(await services().storage.stat(second.object_key)).to.equal(null);
  });

  it('is open to a guest and needs a token', async () => {
    const first = await guest(t.api);
    await ticketFor(first.body.access_token);
    expectError(await t.api.post('/v1/me/avatar/upload-url', { content_type: 'image/jpeg' }), 401, 'auth_required');
    expectError(await t.api.put('/v1/me/avatar', { object_key: 'x' }), 401, 'auth_required');
    expectError(await t.api.delete('/v1/me/avatar'), 401, 'auth_required');
  });
});
