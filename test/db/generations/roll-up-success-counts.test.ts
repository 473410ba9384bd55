import { expect } from 'chai';
import { rollUpSuccessCounts } from '../../../db/generations/roll-up-success-counts';
import { succeedGeneration } from '../../../db/generations/succeed-generation';
import { earningTerms } from '../../../db/user-effects/record-earning';
import { startSuccessCountRollUp } from '../../../workers/generations/success-counts';
import { insertEffect, insertGeneration } from '../../generation-fixtures';
import { resetDatabase, services } from '../../harness';
import { makeUser } from '../../users';
import { eventually } from '../../../scripts/wait';

const successCount = async (effectId: string): Promise<number> =>
  (await services().db('effects').where({ id: effectId }).first('success_count')).success_count;

const tallies = async (): Promise<number> =>
  Number((await services().db('effect_success_tallies').count<{ count: string }[]>('* as count'))[0].count);

/** `count` successes of `effectId`'s generations, each in its own transaction as a worker commits them. */
async function succeed(effectId: string, count: number): Promise<void> {
  const { db, boss, config } = services();
  for (let index = 0; index < count; index += 1) {
    const generationId = await processingGenerationOf(effectId);
    await db.transaction((trx) => succeedGeneration(trx, boss, { generationId, preview: null }, earningTerms(config)));
  }
}

async function processingGenerationOf(effectId: string): Promise<string> {
  const id = await insertGeneration((await makeUser()).id, 'processing');
  await services().db('generations').where({ id }).update({ effect_id: effectId, result_key: `results/${id}.jpg` });
  return id;
}

describe('success counts (popularity, scheduler role)', function () {
  this.timeout(20_000);
  let popular: string;
  let other: string;

  beforeEach(async () => {
    await resetDatabase();
    popular = await insertEffect('winter-portrait');
    other = await insertEffect('golden-masterpiece');
  });

  it('adds each tally to its effect exactly once, also when two schedulers roll up at the same moment', async () => {
    await succeed(popular, 30);
    await succeed(other, 7);
    const taken = await Promise.all([rollUpSuccessCounts(services().db, 10), rollUpSuccessCounts(services().db, 10)]);
    expect(taken[0] + taken[1]).to.equal(20);
    while ((await rollUpSuccessCounts(services().db, 10)) > 0);
    expect(await successCount(popular)).to.equal(30);
    expect(await successCount(other)).to.equal(7);
    expect(await tallies()).to.equal(0);
  });

  it('lets a success commit while another transaction holds the effect\'s row (another success once did)', async () => {
    const { db, boss, config } = services();
    const generationId = await processingGenerationOf(popular);
    await db.transaction(async (holder) => {
      await holder.raw('select id from effects where id = ? for update', [popular]);
      await db.transaction(async (trx) => {
        await trx.raw("set local lock_timeout = '1s'");
        expect(await succeedGeneration(trx, boss, { generationId, preview: null }, earningTerms(config))).to.equal(true);
      });
    });
    expect(await rollUpSuccessCounts(db, 10)).to.equal(1);
    expect(await successCount(popular)).to.equal(1);
  });

  it('drops the tallies of an effect deleted before the roll-up, and bumps no catalog version', async () => {
    const { db } = services();
    await succeed(popular, 2);
    await succeed(other, 3);
    await db('effects').where({ id: other }).delete();
    const version = async () => (await db.raw('select last_value from catalog_version')).rows[0].last_value as string;
    const before = await version();
    expect(await rollUpSuccessCounts(db, 10)).to.equal(5);
    expect(await successCount(popular)).to.equal(2);
    expect(await tallies()).to.equal(0);
    expect(await version()).to.equal(before);
  });

  it('runs in the scheduler: successes reach the count within seconds', async () => {
    const part = startSuccessCountRollUp(services());
    try {
      await succeed(popular, 4);
      await eventually(() => successCount(popular), (count) => count === 4, 10_000, 100);
      expect(await tallies()).to.equal(0);
    } finally {
      await part.stop();
    }
  });
});
