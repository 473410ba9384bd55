import { expect } from 'chai';
import sharp from 'sharp';
import { demoClip, demoPhoto, demoPoster } from '../../media/demo-assets';
import { probeVideo } from '../../media/video-probe';
import { demoTransparentPng } from './fixtures';

describe('media/demo-assets', function () {
  this.timeout(20_000);

  it('draws a JPEG poster of the requested size, the same bytes for the same slug', async () => {
    const [first, second] = await Promise.all([
      demoPoster('dance-video', { width: 720, height: 1280 }),
      demoPoster('dance-video', { width: 720, height: 1280 }),
    ]);
    const { format, width, height } = await sharp(first).metadata();
    expect([format, width, height]).to.deep.equal(['jpeg', 720, 1280]);
    expect(first.equals(second)).to.equal(true);
  });

  it('gives different slugs different colours', async () => {
    const size = { width: 200, height: 200 };
    const [a, b] = await Promise.all([demoPoster('twin-studio', size), demoPoster('family-trio', size)]);
    expect(await sharp(a).stats().then((s) => s.dominant)).to.not.deep.equal(await sharp(b).stats().then((s) => s.dominant));
  });

  it('escapes a slug that would break the SVG', async () => {
    const { width } = await sharp(await demoPoster('<a&b>"', { width: 100, height: 100 })).metadata();
    expect(width).to.equal(100);
  });

  it('makes a 640x800 JPEG face photo stand-in', async () => {
    const { format, width, height } = await sharp(await demoPhoto()).metadata();
    expect([format, width, height]).to.deep.equal(['jpeg', 640, 800]);
  });

  it('makes a PNG with transparent corners', async () => {
    const png = await demoTransparentPng();
    const { format, hasAlpha } = await sharp(png).metadata();
    expect([format, hasAlpha]).to.deep.equal(['png', true]);
    const { data } = await sharp(png).extract({ left: 0, top: 0, width: 1, height: 1 }).raw().toBuffer({ resolveWithObject: true });
    expect(data[3]).to.equal(0);
  });

  it('makes an H.264 MP4 clip of the requested length, size and rate, silent unless asked', async () => {
    const info = await probeVideo(await demoClip({ seconds: 2, width: 320, height: 240, fps: 24 }));
    expect(info).to.include({ videoCodec: 'h264', width: 320, height: 240, fps: 24, hasAudio: false });
    expect(info.durationS).to.be.closeTo(2, 0.1);
  });
});
