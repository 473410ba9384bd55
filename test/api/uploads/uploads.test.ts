import { expect } from 'chai';
import { photo } from '../../generation-fixtures';
import { resetDatabase, useTestApp } from '../../harness';
import { makeUser } from '../../users';

/** What a mobile client does with the ticket: a multipart POST with every field unchanged and the file last. */
export async function postToTicket(ticket: { url: string; fields: Record<string, string> }, body: Buffer, contentType: string): Promise<number> {
  const form = new FormData();
  for (const [name, value] of Object.entries(ticket.fields)) form.append(name, value);
  form.append('file', new Blob([body], { type: contentType }), 'photo');
  const response = await fetch(ticket.url, { method: 'POST', body: form });
  await response.arrayBuffer();
  return response.status;
}

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
