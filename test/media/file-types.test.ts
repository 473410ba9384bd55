import { expect } from 'chai';
import sharp from 'sharp';
import { demoClip } from '../../media/demo-assets';
import { UnreadableVideoError, UnsupportedImageFormatError } from '../../media/errors';
import { imageFileType, videoFileType } from '../../media/file-types';
import { rejectionOf, solidJpeg, demoTransparentPng } from './fixtures';

describe('media/file-types', () => {
  describe('imageFileType', () => {
    it('keeps a transparent PNG as PNG', async () => {
      expect(await imageFileType(await demoTransparentPng())).to.deep.equal({ extension: 'png', contentType: 'image/png' });
    });

    it('names a JPEG .jpg, image/jpeg', async () => {
      expect(await imageFileType(await solidJpeg(64, 64))).to.deep.equal({ extension: 'jpg', contentType: 'image/jpeg' });
    });

    it('names a WebP .webp, image/webp', async () => {
      const webp = await sharp(await solidJpeg(64, 64)).webp().toBuffer();
      expect(await imageFileType(webp)).to.deep.equal({ extension: 'webp', contentType: 'image/webp' });
    });

    it('refuses an SVG: it is not served to clients', async () => {
      const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>');
      const error = await rejectionOf(imageFileType(svg));
      expect(error).to.be.instanceOf(UnsupportedImageFormatError);
      expect((error as UnsupportedImageFormatError).format).to.equal('svg');
    });
  });

  describe('videoFileType', () => {
    it('names an H.264 MP4 .mp4, video/mp4', async function () {
      this.timeout(10_000);
      const clip = await demoClip({ seconds: 0.2, width: 64, height: 64 });
      expect(videoFileType(clip)).to.deep.equal({ extension: 'mp4', contentType: 'video/mp4' });
    });

    it('throws UnreadableVideoError for a file without an ftyp box', () => {
      expect(() => videoFileType(Buffer.alloc(64))).to.throw(UnreadableVideoError);
    });

    it('throws UnreadableVideoError for an ISO container with only HEIF brands', () => {
      const ftyp = Buffer.alloc(24);
      ftyp.writeUInt32BE(24, 0);
      ftyp.write('ftypheic', 4, 'latin1');
      ftyp.write('mif1heic', 16, 'latin1');
      expect(() => videoFileType(ftyp)).to.throw(UnreadableVideoError);
    });
  });
});
