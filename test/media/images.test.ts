import { expect } from 'chai';
import sharp from 'sharp';
import { UnreadableImageError } from '../../media/errors';
import { probeImage, reencodeJpegWithoutMetadata, webpCopy } from '../../media/images';
import { hugePngHeader } from '../images';
import { rejectionOf, solidJpeg, demoTransparentPng } from './fixtures';

async function sizeOf(image: Buffer): Promise<[number, number]> {
  const { width, height } = await sharp(image).metadata();
  return [width, height];
}

/** A landscape JPEG stored sideways with EXIF orientation 6, a camera make and a GPS position. */
async function jpegWithExifAndGps(): Promise<Buffer> {
  return sharp(await solidJpeg(400, 200))
    .withExif({
      IFD0: { Make: 'TestCam', Model: 'X1' },
      IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '55/1 45/1 0/1', GPSLongitudeRef: 'E', GPSLongitude: '37/1 37/1 0/1' },
    })
    .withMetadata({ orientation: 6 })
    .jpeg()
    .toBuffer();
}

describe('media/images', () => {
  describe('probeImage', () => {
    it('reports format, size, megapixels and no alpha for a JPEG', async () => {
      const info = await probeImage(await solidJpeg(2000, 1500));
      expect(info).to.deep.equal({ format: 'jpeg', width: 2000, height: 1500, hasAlpha: false, megapixels: 3 });
    });

    it('detects the alpha channel of a transparent PNG', async () => {
      const info = await probeImage(await demoTransparentPng());
      expect(info.format).to.equal('png');
      expect(info.hasAlpha).to.equal(true);
    });

    it('reports the displayed size of a photo stored sideways with an EXIF orientation', async () => {
      const info = await probeImage(await jpegWithExifAndGps());
      expect([info.width, info.height]).to.deep.equal([200, 400]);
    });

    it('reads the size of a photo above sharp\'s pixel limit from its header, for its caller to judge', async () => {
      const info = await probeImage(hugePngHeader(20_000));
      expect([info.width, info.height, info.megapixels]).to.deep.equal([20_000, 20_000, 400]);
    });

    it('throws UnreadableImageError for bytes that are not an image', async () => {
      const error = await rejectionOf(probeImage(Buffer.from('definitely not an image')));
      expect(error).to.be.instanceOf(UnreadableImageError);
    });

    it('throws UnreadableImageError for an empty buffer', async () => {
      expect(await rejectionOf(probeImage(Buffer.alloc(0)))).to.be.instanceOf(UnreadableImageError);
    });
  });

  describe('webpCopy', () => {
    it('scales a 2400x3200 original so the short side is 480, 720 and 1080, proportions kept', async () => {
      const original = await solidJpeg(2400, 3200);
      const sizes = await Promise.all([480, 720, 1080].map(async (side) => sizeOf(await webpCopy(original, side))));
      expect(sizes).to.deep.equal([
        [480, 640],
        [720, 960],
        [1080, 1440],
      ]);
    });

    it('puts the target on the height of a landscape original', async () => {
      expect(await sizeOf(await webpCopy(await solidJpeg(3000, 1500), 720))).to.deep.equal([1440, 720]);
    });

    it('keeps a 300x400 original at 300x400 for every target: never upscales', async () => {
      const original = await solidJpeg(300, 400);
      for (const side of [480, 720, 1080]) expect(await sizeOf(await webpCopy(original, side))).to.deep.equal([300, 400]);
    });

    it('writes WebP and keeps the transparency of a PNG', async () => {
      const copy = await webpCopy(await demoTransparentPng(), 480);
      const { format, hasAlpha } = await sharp(copy).metadata();
      expect(format).to.equal('webp');
      expect(hasAlpha).to.equal(true);
      const { data } = await sharp(copy).ensureAlpha().extract({ left: 0, top: 0, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true });
      expect(data[3], 'alpha of the top-left corner').to.equal(0);
    });

    it('turns a photo stored sideways upright before resizing', async () => {
      expect(await sizeOf(await webpCopy(await jpegWithExifAndGps(), 100))).to.deep.equal([100, 200]);
    });

    it('throws UnreadableImageError for a truncated JPEG', async () => {
      const jpeg = await solidJpeg(800, 600);
      const error = await rejectionOf(webpCopy(jpeg.subarray(0, Math.floor(jpeg.length / 2)), 480));
      expect(error).to.be.instanceOf(UnreadableImageError);
    });
  });

  describe('reencodeJpegWithoutMetadata', () => {
    it('removes EXIF including the GPS position', async () => {
      const original = await jpegWithExifAndGps();
      const before = await sharp(original).metadata();
      expect(before.exif?.includes('TestCam'), 'fixture has EXIF').to.equal(true);
      expect(before.exif?.includes(Buffer.from([0x25, 0x88])), 'fixture has the GPS IFD pointer tag').to.equal(true);

      const after = await sharp(await reencodeJpegWithoutMetadata(original)).metadata();
      expect(after.format).to.equal('jpeg');
      expect(after.exif).to.equal(undefined);
      expect(after.xmp).to.equal(undefined);
      expect(after.orientation).to.equal(undefined);
    });

    it('turns the pixels upright per the EXIF orientation before dropping it', async () => {
      expect(await sizeOf(await reencodeJpegWithoutMetadata(await jpegWithExifAndGps()))).to.deep.equal([200, 400]);
    });

    it('turns a transparent PNG into an opaque JPEG on white', async () => {
      const jpeg = await reencodeJpegWithoutMetadata(await demoTransparentPng());
      const { format, hasAlpha } = await sharp(jpeg).metadata();
      expect([format, hasAlpha]).to.deep.equal(['jpeg', false]);
      const { data } = await sharp(jpeg).extract({ left: 0, top: 0, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true });
      expect([...data]).to.satisfy((rgb: number[]) => rgb.every((value) => value > 245));
    });

    it('throws UnreadableImageError for bytes that are not an image', async () => {
      expect(await rejectionOf(reencodeJpegWithoutMetadata(Buffer.from('nope')))).to.be.instanceOf(UnreadableImageError);
    });
  });
});
