import { expect } from 'chai';
import sharp from 'sharp';
import { completeEffectPreview, previewFolder, replaceEffectPreview, setEffectPoster } from '../../../services/catalog/previews';
import { demoClip, demoPoster } from '../../../media/demo-assets';
import { resetDatabase, services, useTestApp } from '../../harness';
import { addCategory, addEffect } from '../../api/catalog/fixtures';

describe('effect previews', function () {
  this.timeout(60_000);
  const t = useTestApp();
  let effectId: string;
  beforeEach(async () => {
    await resetDatabase();
    await addCategory('fun');
    effectId = await addEffect('target', { categories: ['fun'] });
  });

  const effect = async () => (await t.api.get('/v1/effects/target')).body;
  const fetched = async (url: string) => {
    const response = await fetch(url);
    return { status: response.status, type: response.headers.get('content-type'), body: Buffer.from(await response.arrayBuffer()) };
  };
  const poster = (slug: string) => demoPoster(slug, { width: 900, height: 1200 });

  it('shows the poster at once with preview null, then the copies, under keys of that poster', async () => {
    const { db, storage } = services();
    const media = { poster: await poster('first'), focus: { x: 0.25, y: 0.75 } };
    await setEffectPoster(db, storage, effectId, media);
    const before = await effect();
    expect(before.preview).to.equal(null);
    expect(before.preview_url).to.match(new RegExp(`/effects/${effectId}/[0-9a-f]{24}/poster\\.jpg$`));
    expect((await fetched(before.preview_url)).body.equals(media.poster)).to.equal(true);

    expect(await completeEffectPreview(db, storage, effectId, media)).to.equal(true);
    const after = await effect();
    const folder = before.preview_url.replace(/poster\.jpg$/, '');
    expect(after.preview_url).to.equal(before.preview_url);
    expect(after.preview).to.deep.include({
      thumb: `${folder}thumb.webp`, card: `${folder}card.webp`, full: `${folder}full.webp`,
      animation: null, video: null, width: 900, height: 1200, focus: { x: 0.25, y: 0.75 }, video_focus: null,
    });
    expect(after.preview.blurhash).to.be.a('string');
    expect([after.preview_video_url, after.preview_animation_url]).to.deep.equal([null, null]);
    const thumb = await fetched(after.preview.thumb);
    expect([thumb.status, thumb.type]).to.deep.equal([200, 'image/webp']);
    expect(await sharp(thumb.body).metadata()).to.include({ width: 480, height: 640 });
  });

  it('gives a new poster new addresses and leaves the old files in place', async () => {
    const { db, storage } = services();
    await replaceEffectPreview(db, storage, effectId, { poster: await poster('first') });
    const first = await effect();
    await replaceEffectPreview(db, storage, effectId, { poster: await poster('second') });
    const second = await effect();
    for (const field of ['thumb', 'card', 'full']) expect(second.preview[field]).not.to.equal(first.preview[field]);
    expect(second.preview_url).not.to.equal(first.preview_url);
    expect((await fetched(first.preview.thumb)).status, 'old copy still served').to.equal(200);
    // The same poster again is the same addresses: nothing new to cache.
    await replaceEffectPreview(db, storage, effectId, { poster: await poster('second') });
    expect((await effect()).preview).to.deep.equal(second.preview);
  });

  it('never shows the copies of a poster that was replaced while they were made', async () => {
    const { db, storage } = services();
    const old = { poster: await poster('old') };
    const replacement = { poster: await poster('new') };
    await setEffectPoster(db, storage, effectId, old);
    await setEffectPoster(db, storage, effectId, replacement);
    expect(await completeEffectPreview(db, storage, effectId, old)).to.equal(false);
    const current = await effect();
    expect(current.preview).to.equal(null);
    expect(current.preview_url).to.contain(`/${previewFolder(effectId, replacement)}/poster.jpg`);
  });

  it('adds the MP4 clip, a separate MP4 animation and the animated WebP when a clip is given', async () => {
    const { db, storage } = services();
    await replaceEffectPreview(db, storage, effectId, {
      poster: await demoPoster('dance', { width: 720, height: 1280 }),
      clip: await demoClip({ seconds: 1, width: 720, height: 1280, fps: 24 }),
      focus: { x: 0.5, y: 0.4 },
      videoFocus: { x: 0.5, y: 0.45 },
    });
    const shown = await effect();
    expect(shown.preview.video).to.equal(shown.preview_video_url).and.to.match(/\/video\.mp4$/);
    expect(shown.preview.animation).to.match(/\/animation\.mp4$/);
    expect(shown.preview_animation_url).to.match(/\/animation\.webp$/);
    expect(shown.preview).to.deep.include({ focus: { x: 0.5, y: 0.4 }, video_focus: { x: 0.5, y: 0.45 } });
    expect((await fetched(shown.preview_video_url)).type).to.equal('video/mp4');
    expect((await fetched(shown.preview_animation_url)).type).to.equal('image/webp');
  });
});
