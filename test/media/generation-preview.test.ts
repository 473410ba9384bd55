import { expect } from 'chai';
import sharp from 'sharp';
import { demoPhoto } from '../../media/demo-assets';
import { UnreadableImageError, UnreadableVideoError } from '../../media/errors';
import { blurhashOf } from '../../media/blurhash';
import { buildGenerationPreview } from '../../media/generation-preview';
import { colourSwitchClip, meanColour, rejectionOf, solidJpeg, demoTransparentPng } from './fixtures';

describe('media/generation-preview buildGenerationPreview', function () {
  this.timeout(20_000);

  /** `buildGenerationPreview`'s answer, checked to have stored its thumb once, the same bytes it answers. */
  async function built(result: Buffer, outputType: 'image' | 'video') {
    const stored: Buffer[] = [];
    const preview = await buildGenerationPreview(result, outputType, async (thumb) => {
      stored.push(thumb);
    });
    expect(stored).to.deep.equal([preview.thumb]);
    return preview;
  }

  /** The rejection of `buildGenerationPreview`, checked to have stored no thumb. */
  async function refusal(result: Buffer, outputType: 'image' | 'video'): Promise<unknown> {
    const stored: Buffer[] = [];
    const error = await rejectionOf(buildGenerationPreview(result, outputType, async (thumb) => {
      stored.push(thumb);
    }));
    expect(stored).to.deep.equal([]);
    return error;
  }

  it('makes a WebP thumb with 480 on the short side of an image, and keeps the original size', async () => {
    const preview = await built(await solidJpeg(1024, 1536), 'image');
    const { format, width, height } = await sharp(preview.thumb).metadata();
    expect([format, width, height]).to.deep.equal(['webp', 480, 720]);
    expect(preview).to.include({ width: 1024, height: 1536, posterIsThumb: false });
    expect(preview.blurhash).to.have.length(28);
  });

  it('samples a JPEG for its blurhash itself, any other format from its thumb (the photo\'s two samples differ slightly)', async () => {
    const jpeg = await demoPhoto();
    const fromJpeg = await built(jpeg, 'image');
    expect(fromJpeg.blurhash).to.equal(await blurhashOf(jpeg)).and.not.equal(await blurhashOf(fromJpeg.thumb));
    const png = await sharp(jpeg).png().toBuffer();
    const fromPng = await built(png, 'image');
    expect(fromPng.blurhash).to.equal(await blurhashOf(fromPng.thumb)).and.not.equal(await blurhashOf(png));
  });

  it('keeps a 320x400 image at 320x400: never upscales the thumb', async () => {
    const { thumb } = await built(await solidJpeg(320, 400), 'image');
    const { width, height } = await sharp(thumb).metadata();
    expect([width, height]).to.deep.equal([320, 400]);
  });

  it('keeps the transparency of a PNG result in the thumb', async () => {
    const { thumb } = await built(await demoTransparentPng(), 'image');
    expect((await sharp(thumb).metadata()).hasAlpha).to.equal(true);
  });

  it('makes the thumb of a video from the frame at 0.5 s, which is the poster, with the video size', async () => {
    const preview = await built(await colourSwitchClip(0.4, 1), 'video');
    const [r, , b] = await meanColour(preview.thumb);
    expect(b, 'blue, shown from 0.4 s').to.be.above(200);
    expect(r).to.be.below(50);
    expect(preview).to.include({ width: 160, height: 120, posterIsThumb: true });
    expect((await sharp(preview.thumb).metadata()).format).to.equal('webp');
  });

  it('throws UnreadableImageError for a truncated image result', async () => {
    const truncated = (await demoPhoto()).subarray(0, 2_000);
    expect(await refusal(truncated, 'image')).to.be.instanceOf(UnreadableImageError);
  });

  it('throws UnreadableVideoError for a broken video result', async () => {
    expect(await refusal(Buffer.from('not a video'), 'video')).to.be.instanceOf(UnreadableVideoError);
  });
});
