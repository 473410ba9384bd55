import { expect } from 'chai';
import type { Config } from '../../../config';
import { applyUserEffectRuns } from '../../../db/user-effects/apply-user-effect-runs';
import { appClient, resetDatabase, services, startTestApp, type TestApp } from '../../harness';
import { slugsOf } from '../catalog/fixtures';
import { userEffectIn } from '../../user-effect-fixtures';
import { makeUser } from '../../users';

const falImage = { fal: { model: 'fal-ai/nano-banana/edit', input: { prompt: '{{prompt}}', image_urls: '{{photos}}' }, output: 'images[0].url' } };
const simulatorRuns = { image: { simulator: { model: 'image' } }, video: { simulator: { model: 'video' } } };

/** fal accounts only, and the image user effects on fal (USER_EFFECT_IMAGE_RUNS). */
const onFal = (config: Config): Config => ({
  ...config,
  generations: { ...config.generations, providerAccounts: [{ kind: 'fal', apiKey: 'fal-key', slots: 2 }] },
  marketplace: { ...config.marketplace, userEffectRuns: { ...config.marketplace.userEffectRuns, image: falImage } },
});

describe('user effects run on the marketplace\'s routes (USER_EFFECT_IMAGE_RUNS, USER_EFFECT_VIDEO_RUNS)', function () {
  this.timeout(60_000);
  const apps: TestApp[] = [];
  beforeEach(() => resetDatabase());
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  const runsOf = async (effectId: string) => services().db('effects').where({ id: effectId }).first('model', 'runs');
  const catalogVersion = async () => Number((await services().db.raw('select last_value from catalog_version')).rows[0].last_value);

  it('an approved or private user effect\'s catalog effect keeps the routes of its output type', async () => {
    const author = await makeUser();
    const image = await userEffectIn(author.id, 'approved');
    const video = await userEffectIn(author.id, 'private', { visibility: 'private', output_type: 'video' });
    expect(await runsOf(image.effect_id!)).to.deep.equal({ model: 'image', runs: simulatorRuns.image });
    expect(await runsOf(video.effect_id!)).to.deep.equal({ model: 'video', runs: simulatorRuns.video });
  });

  it('a web process starting with other routes moves the made effects onto them, once: an unchanged configuration writes nothing', async () => {
    const author = await makeUser();
    const image = await userEffectIn(author.id, 'approved');
    const video = await userEffectIn(author.id, 'approved', { output_type: 'video' });
    const simulatorApp = await startTestApp({});
    apps.push(simulatorApp);
    const seenBySimulator = () => appClient(simulatorApp).get('/v1/effects?category=community');
    expect(slugsOf(await seenBySimulator())).to.have.length(2);

    const falApp = await startTestApp({ adjustConfig: onFal });
    apps.push(falApp);
    expect(await runsOf(image.effect_id!)).to.deep.equal({ model: falImage.fal.model, runs: falImage });
    expect(await runsOf(video.effect_id!)).to.deep.equal({ model: 'video', runs: simulatorRuns.video });
    // Each process offers what its accounts run: fal here, the simulator there.
    expect(slugsOf(await appClient(falApp).get('/v1/effects?category=community'))).to.deep.equal([`community-${image.id}`]);
    expect(slugsOf(await seenBySimulator())).to.deep.equal([`community-${video.id}`]);

    const version = await catalogVersion();
    expect(await applyUserEffectRuns(services().db, falApp.services.config.marketplace.userEffectRuns)).to.equal(0);
    expect(await catalogVersion()).to.equal(version);
    expect(await applyUserEffectRuns(services().db, simulatorRuns)).to.equal(1);
    expect(await runsOf(image.effect_id!)).to.deep.equal({ model: 'image', runs: simulatorRuns.image });
  });
});
