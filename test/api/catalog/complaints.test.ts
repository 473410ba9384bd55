import { expect } from 'chai';
import { resolveComplaints } from '../../../api/catalog/complaints';
import { resetDatabase, services, useTestApp } from '../../harness';
import { makeUser } from '../../users';
import { addCategory, addEffect, slugsOf } from './fixtures';

/** Rule 5, with COMPLAINT_DEMOTE_THRESHOLD=2 and COMPLAINT_MIN_ACCOUNT_AGE_DAYS=7. */
describe('complaints (rule 5)', () => {
  const t = useTestApp({ config: { COMPLAINT_DEMOTE_THRESHOLD: '2', COMPLAINT_MIN_ACCOUNT_AGE_DAYS: '7' } });
  let effectId: string;
  beforeEach(async () => {
    await resetDatabase();
    await addCategory('fun');
    effectId = await addEffect('target', { categories: ['fun'], position: 1 });
    await addEffect('other', { categories: ['fun'], position: 2 });
  });

  const complain = (token: string | undefined, body: object = { reason: 'unsafe' }, effect = effectId) =>
    t.api.post(`/v1/effects/${effect}/complaints`, body, { token });
  const complaints = () => services().db('complaints').where({ effect_id: effectId }).orderBy('created_at');
  const demoted = async () => (await services().db('effects').where({ id: effectId }).first('demoted_at')).demoted_at !== null;

  it('answers 204 and stores reason and note', async () => {
    const { id, token } = await makeUser({ ageDays: 30 });
    const answer = await complain(token, { reason: 'my_face', note: 'This is me' });
    expect(answer.status).to.equal(204);
    expect(answer.text).to.equal('');
    expect(await complaints()).to.have.length(1).and.to.satisfy(([row]: any[]) => row.user_id === id && row.reason === 'my_face' && row.note === 'This is me');
  });

  it('stores an unknown reason as other', async () => {
    await complain((await makeUser({ ageDays: 30 })).token, { reason: 'aliens' });
    expect((await complaints())[0].reason).to.equal('other');
  });

  it('answers 401 without a token and 403 registration_required to a guest', async () => {
    const anonymous = await complain(undefined);
    expect([anonymous.status, anonymous.body.error.code]).to.deep.equal([401, 'auth_required']);
    const guest = await complain((await makeUser({ guest: true, ageDays: 30 })).token);
    expect([guest.status, guest.body.error.code]).to.deep.equal([403, 'registration_required']);
    expect(await complaints()).to.have.length(0);
  });

  it('answers 404 for an absent or hidden effect', async () => {
    const { token } = await makeUser({ ageDays: 30 });
    expect((await complain(token, undefined, '6f1c1d8e-3a55-4a7e-9d5e-0c0f8b1e2a33')).status).to.equal(404);
    await services().db('effects').where({ id: effectId }).update({ hidden: true });
    const hidden = await complain(token);
    expect([hidden.status, hidden.body.error.code]).to.deep.equal([404, 'not_found']);
  });

  it('counts a repeat once until a moderator resolves the case; then the person can complain again', async () => {
    const { token } = await makeUser({ ageDays: 30 });
    expect((await complain(token)).status).to.equal(204);
    expect((await complain(token, { reason: 'brand' })).status).to.equal(204);
    expect(await complaints()).to.have.length(1);
    await resolveComplaints(services().db, effectId, 'keep');
    expect((await complain(token)).status).to.equal(204);
    expect(await complaints()).to.have.length(2);
  });

  it('does not demote on repeats of one person', async () => {
    const { token } = await makeUser({ ageDays: 30 });
    for (let round = 0; round < 3; round += 1) await complain(token);
    expect(await demoted()).to.equal(false);
  });

  it('demotes after the threshold from different long-registered people: last in lists, still open by link', async () => {
    await complain((await makeUser({ ageDays: 30 })).token);
    expect(await demoted()).to.equal(false);
    expect(slugsOf(await t.api.get('/v1/effects'))).to.deep.equal(['target', 'other']);
    const answer = await complain((await makeUser({ ageDays: 8 })).token);
    expect(answer.status).to.equal(204);
    expect(await demoted()).to.equal(true);
    expect(slugsOf(await t.api.get('/v1/effects'))).to.deep.equal(['other', 'target']);
    expect(slugsOf(await t.api.get('/v1/effects?category=fun'))).to.deep.equal(['other', 'target']);
    expect((await t.api.get('/v1/effects/target')).status).to.equal(200);
  });

  it('does not count fresh accounts toward demotion, and answers them the same', async () => {
    const answers = [];
    for (const ageDays of [30, 1, 0]) answers.push((await complain((await makeUser({ ageDays })).token)).status);
    expect(answers).to.deep.equal([204, 204, 204]);
    expect(await complaints()).to.have.length(3);
    expect(await demoted()).to.equal(false);
  });

  it('lets a moderator lift the demotion or hide the effect', async () => {
    for (let person = 0; person < 2; person += 1) await complain((await makeUser({ ageDays: 30 })).token);
    await resolveComplaints(services().db, effectId, 'keep');
    expect(await demoted()).to.equal(false);
    expect((await complaints()).every((row: any) => row.resolved_at !== null)).to.equal(true);
    await resolveComplaints(services().db, effectId, 'hide');
    expect((await t.api.get('/v1/effects/target')).status).to.equal(404);
  });

  it('validates the body: reason required, note at most 2000 characters', async () => {
    const { token } = await makeUser({ ageDays: 30 });
    expect((await complain(token, {})).status).to.equal(422);
    expect((await complain(token, { reason: 'quality', note: 'x'.repeat(2001) })).status).to.equal(422);
  });
});
