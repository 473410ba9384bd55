import { expect } from 'chai';
import { insertEffect, photo } from '../../generation-fixtures';
import { resetDatabase, services, useTestApp } from '../../harness';
import { postToTicket, submitToTicket } from '../../../scripts/upload-ticket';
import { makeUser } from '../../users';

describe('uploads', () => {
  const t = useTestApp();
  beforeEach(() => resetDatabase());

  it('gives a guest a presigned POST ticket under uploads/<user_id>/, pending until the file is put, then completed with its size', async () => {
    const guest = await makeUser({ guest: true, balance: 0 });
    const ticket = await t.api.post('/v1/uploads', { content_type: 'image/png' }, { token: guest.token });
    expect(ticket.status).to.equal(201);
    expect(ticket.body).to.have.keys('id', 'url', 'fields', 'object_key', 'expires_in');
    expect(ticket.body.expires_in).to.equal(600);
    expect(ticket.body.object_key).to.equal(`uploads/${guest.id}/${ticket.body.id}.png`);
    expect(ticket.body.fields).to.include({ key: ticket.body.object_key, 'Content-Type': 'image/png' });

    const before = await t.api.get(`/v1/uploads/${ticket.body.id}`, { token: guest.token });
    expect(before.status).to.equal(200);
    expect(before.body).to.include({ id: ticket.body.id, status: 'pending', content_type: 'image/png', size: null });
    expect(Date.parse(before.body.created_at)).to.be.a('number');

    const file = await photo();
    expect(await postToTicket(ticket.body, file, 'image/png')).to.be.within(200, 204);
    const after = await t.api.get(`/v1/uploads/${ticket.body.id}`, { token: guest.token });
    expect(after.body).to.include({ status: 'completed', size: file.length });
  });

  describe('the object is the one its ticket named', () => {
    it("refuses (403 AccessDenied) a file sent with another upload's key swapped into the ticket, and that upload keeps its file", async () => {
      const victim = await makeUser({ guest: true, balance: 100 });
      const attacker = await makeUser({ guest: true });
      const victimTicket = (await t.api.post('/v1/uploads', { content_type: 'image/jpeg' }, { token: victim.token })).body;
      const attackerTicket = (await t.api.post('/v1/uploads', { content_type: 'image/jpeg' }, { token: attacker.token })).body;
      const original = await photo();
      expect(await postToTicket(victimTicket, original, 'image/jpeg')).to.equal(204);

      const swapped = { ...attackerTicket, fields: { ...attackerTicket.fields, key: victimTicket.object_key } };
      expect(await submitToTicket(swapped, await photo(64, 48, '#102030'), 'image/jpeg')).to.deep.equal({ status: 403, code: 'AccessDenied' });
      expect((await t.api.get(`/v1/uploads/${victimTicket.id}`, { token: victim.token })).body).to.include({ status: 'completed', size: original.length });
      expect((await services().storage.get(victimTicket.object_key)).equals(original)).to.equal(true);
      const effect = await insertEffect('winter-portrait');
      expect((await t.api.post('/v1/generations', { effect_id: effect, characters: [[victimTicket.id]] }, { token: victim.token })).status).to.equal(202);
    });

    it('refuses (403 AccessDenied) a file of another content type than the ticket named', async () => {
      const user = await makeUser({ guest: true, balance: 100 });
      const ticket = (await t.api.post('/v1/uploads', { content_type: 'image/png' }, { token: user.token })).body;
      const sent = await submitToTicket({ ...ticket, fields: { ...ticket.fields, 'Content-Type': 'text/html' } }, Buffer.from('<script>alert(1)</script>'), 'text/html');
      expect(sent).to.deep.equal({ status: 403, code: 'AccessDenied' });
      expect((await t.api.get(`/v1/uploads/${ticket.id}`, { token: user.token })).body).to.include({ status: 'pending' });
    });

    it('refuses (400 EntityTooLarge) a 16 MB photo: the ticket allows 15 MB', async () => {
      const user = await makeUser({ guest: true });
      const ticket = (await t.api.post('/v1/uploads', { content_type: 'image/jpeg' }, { token: user.token })).body;
      expect(await submitToTicket(ticket, Buffer.alloc(16 * 1024 * 1024, 7), 'image/jpeg')).to.deep.equal({ status: 400, code: 'EntityTooLarge' });
      expect(await services().storage.stat(ticket.object_key)).to.equal(null);
    });

    it("still uses an object only when it came through its own ticket (for a store that would not check the policy)", async () => {
      const user = await makeUser({ guest: true, balance: 100 });
      const ticket = (await t.api.post('/v1/uploads', { content_type: 'image/jpeg' }, { token: user.token })).body;
      await services().storage.put(ticket.object_key, await photo(), 'image/jpeg');
      expect((await t.api.get(`/v1/uploads/${ticket.id}`, { token: user.token })).body).to.include({ status: 'pending', size: null });
      const refused = await t.api.post('/v1/generations', { effect_id: await insertEffect('winter-portrait'), characters: [[ticket.id]] }, { token: user.token });
      expect(refused.status).to.equal(422);
      expect(refused.body.error.details).to.deep.equal([{ loc: ['body', 'characters', 0, 0], msg: 'the file under this upload was not put there through its upload ticket', type: 'upload_not_via_ticket' }]);
    });
  });

  it('refuses (422 upload_too_large) a file above 15 MB that came through its own ticket, behind a store that let it in', async () => {
    const user = await makeUser({ guest: true, balance: 100 });
    const ticket = (await t.api.post('/v1/uploads', { content_type: 'image/jpeg' }, { token: user.token })).body;
    // A ticket for the same key whose policy allows more, as a store that ignores the range would.
    const lax = await services().storage.presignedPost(ticket.object_key, { contentType: 'image/jpeg', maxBytes: 16 * 1024 * 1024, expiresInSeconds: 60 });
    expect((await submitToTicket(lax, Buffer.concat([await photo(), Buffer.alloc(15 * 1024 * 1024, 7)]), 'image/jpeg')).status).to.equal(204);
    const refused = await t.api.post('/v1/generations', { effect_id: await insertEffect('winter-portrait'), characters: [[ticket.id]] }, { token: user.token });
    expect(refused.status).to.equal(422);
    expect(refused.body.error.details).to.deep.equal([{ loc: ['body', 'characters', 0, 0], msg: 'the upload is larger than 15 MB', type: 'upload_too_large' }]);
  });

  it('accepts only JPEG, PNG and WebP', async () => {
    const user = await makeUser({ guest: true });
    for (const contentType of ['image/jpeg', 'image/webp']) {
      expect((await t.api.post('/v1/uploads', { content_type: contentType }, { token: user.token })).status).to.equal(201);
    }
    const refused = await t.api.post('/v1/uploads', { content_type: 'image/gif' }, { token: user.token });
    expect(refused.status).to.equal(422);
    expect(refused.body.error.details[0].loc).to.deep.equal(['body', 'content_type']);
  });

  it("answers 404 for another user's upload and for an id that is not a UUID, 401 without a token", async () => {
    const owner = await makeUser({ guest: true });
    const stranger = await makeUser({ guest: true });
    const ticket = await t.api.post('/v1/uploads', { content_type: 'image/jpeg' }, { token: owner.token });
    expect((await t.api.get(`/v1/uploads/${ticket.body.id}`, { token: stranger.token })).status).to.equal(404);
    expect((await t.api.get('/v1/uploads/not-a-uuid', { token: owner.token })).status).to.equal(404);
    expect((await t.api.get(`/v1/uploads/${ticket.body.id}`)).status).to.equal(401);
    expect((await t.api.post('/v1/uploads', { content_type: 'image/jpeg' })).status).to.equal(401);
  });
});
