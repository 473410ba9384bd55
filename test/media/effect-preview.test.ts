import { expect } from 'chai';
import sharp from 'sharp';
import { demoClip, demoPoster } from '../../media/demo-assets';
import { buildEffectPreview } from '../../media/effect-preview';
import { UnreadableImageError } from '../../media/errors';
import { probeVideo } from '../../media/video-probe';
import { rejectionOf } from './fixtures';

async function sizeOf(image: Buffer): Promise<[number, number]> {
  const { width, height } = await sharp(image).metadata();
  return [width, height];
}

describe('media/effect-preview buildEffectPreview', function () {
  this.timeout(30_000);

  it('makes thumb, card and full WebP copies at 480/720/1080 on the short side of a large poster', async () => {
    const preview = await buildEffectPreview({ poster: await demoPoster('golden-masterpiece', { width: 1500, height: 2000 }) });
    expect(preview.files.map(({ role, extension, contentType }) => [role, extension, contentType])).to.deep.equal([
      ['thumb', 'webp', 'image/webp'],
      ['card', 'webp', 'image/webp'],
      ['full', 'webp', 'image/webp'],
    ]);
    expect(await Promise.all(preview.files.map(({ body }) => sizeOf(body)))).to.deep.equal([
      [480, 640],
      [720, 960],
      [1080, 1440],
    ]);
    expect([preview.width, preview.height], 'size of the original poster').to.deep.equal([1500, 2000]);
    expect(preview.blurhash).to.have.length(28);
  });

  it('keeps every copy of a 600x400 poster at 600x400: never larger than the original', async () => {
    const preview = await buildEffectPreview({ poster: await demoPoster('small', { width: 600, height: 400 }) });
    for (const file of preview.files) expect(await sizeOf(file.body), file.role).to.deep.equal([600, 400]);
  });

  it('adds the 720 MP4 video, a separate 480 MP4 animation and an animated WebP when a clip is given', async () => {
    const preview = await buildEffectPreview({
      poster: await demoPoster('dance-video', { width: 720, height: 1280 }),
      clip: await demoClip({ seconds: 1, width: 720, height: 960, fps: 30, withAudio: true }),
    });
    const byRole = new Map(preview.files.map((file) => [file.role, file]));
    expect([...byRole.keys()]).to.deep.equal(['thumb', 'card', 'full', 'video', 'animation', 'animation_webp']);

    const video = byRole.get('video')!;
    const animation = byRole.get('animation')!;
    const animationWebp = byRole.get('animation_webp')!;
    expect([video.extension, video.contentType]).to.deep.equal(['mp4', 'video/mp4']);
    expect([animation.extension, animation.contentType]).to.deep.equal(['mp4', 'video/mp4']);
    expect([animationWebp.extension, animationWebp.contentType]).to.deep.equal(['webp', 'image/webp']);

    expect(await probeVideo(video.body)).to.include({ videoCodec: 'h264', width: 720, height: 960, hasAudio: false });
    expect(await probeVideo(animation.body)).to.include({ videoCodec: 'h264', width: 480, height: 640, hasAudio: false });
    expect(animation.body.equals(video.body), 'animation is a separate file').to.equal(false);
    expect((await sharp(animationWebp.body).metadata()).pages).to.be.above(1);
  });

  it('throws UnreadableImageError for a broken poster', async () => {
    expect(await rejectionOf(buildEffectPreview({ poster: Buffer.from('broken') }))).to.be.instanceOf(UnreadableImageError);
  });
});
