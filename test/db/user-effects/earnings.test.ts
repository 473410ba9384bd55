import { expect } from 'chai';
import { succeedGeneration } from '../../../db/generations/succeed-generation';
import { insertGeneration } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';
import { userEffectIn } from '../../user-effect-fixtures';
import { makeUser } from '../../users';

describe('author earnings: recorded in the transaction of a generation\'s success', () => {
  beforeEach(() => resetDatabase());
  const terms = { sharePercent: 20, settleAfterS: 7 * 86_400 };

  async function processingGenerationWith(userId: string, effectId: string, cost: number): Promise<string> {
    const id = await insertGeneration(userId, 'processing');
    await services().db('generations').where({ id }).update({ effect_id: effectId, cost, result_key: 'results/x.jpg' });
    return id;
  }

  it('20 % of another user\'s generation with an approved user effect, rounded down, pending for 7 billing days; once per generation', async () => {
    const { db, boss } = services();
    const author = await makeUser();
    const buyer = await makeUser();
    const userEffect = await userEffectIn(author.id, 'approved');
    const generationId = await processingGenerationWith(buyer.id, userEffect.effect_id!, 14);
    expect(await db.transaction((trx) => succeedGeneration(trx, boss, { generationId, preview: null }, terms))).to.equal(true);
    const [earning] = await db('user_effect_earnings').select('*');
    expect(earning).to.include({ user_id: author.id, user_effect_id: userEffect.id, generation_id: generationId, amount: 2, status: 'pending' });
    expect((earning.settles_at.getTime() - earning.created_at.getTime()) / 1000).to.be.closeTo(7 * 86_400, 1);
    expect(await db.transaction((trx) => succeedGeneration(trx, boss, { generationId, preview: null }, terms))).to.equal(false);
    // Even a success that got past its guard could not earn twice: one earning per generation.
    await db('generations').where({ id: generationId }).update({ status: 'processing' });
    expect(await db.transaction((trx) => succeedGeneration(trx, boss, { generationId, preview: null }, terms))).to.equal(true);
    expect(await db('user_effect_earnings')).to.have.length(1);
  });

  for (const [why, status, own, cost] of [
    ['the author\'s own generation', 'approved', true, 10],
    ['a private user effect', 'private', false, 10],
    ['a share that rounds to 0', 'approved', false, 4],
  ] as const) {
    it(`nothing for ${why}`, async () => {
      const { db, boss } = services();
      const author = await makeUser();
      const userEffect = await userEffectIn(author.id, status);
      const generationId = await processingGenerationWith(own ? author.id : (await makeUser()).id, userEffect.effect_id!, cost);
      expect(await db.transaction((trx) => succeedGeneration(trx, boss, { generationId, preview: null }, terms))).to.equal(true);
      expect(await db('user_effect_earnings')).to.deep.equal([]);
    });
  }
});
