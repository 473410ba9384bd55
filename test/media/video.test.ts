import { readdir } from 'node:fs/promises';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import { demoClip } from '../../media/demo-assets';
import { UnreadableVideoError } from '../../media/errors';
import { extractFrame, makeAnimatedWebp, makeAnimationLoop, makePreviewClip } from '../../media/video';
import { probeVideo } from '../../media/video-probe';
import { colourSwitchClip, meanColour, rejectionOf, rotatedCopy } from './fixtures';

describe('media/video', function () {
  this.timeout(30_000);

  /** 1280x960 at 90 fps with sound: larger and faster than any preview, so every limit shows. */
  let bigFastClip: Buffer;
  let smallClip: Buffer;
  let redThenBlue: Buffer;

  before(async () => {
    [bigFastClip, smallClip, redThenBlue] = await Promise.all([
      demoClip({ seconds: 1, width: 1280, height: 960, fps: 90, withAudio: true }),
      demoClip({ seconds: 1, width: 320, height: 240, fps: 30 }),
      colourSwitchClip(0.4, 1),
    ]);
  });

  describe('extractFrame', () => {
    it('takes the frame at 0.5 s, after a switch from red to blue at 0.4 s', async () => {
      const [r, , b] = await meanColour(await extractFrame(redThenBlue, 0.5));
      expect(b).to.be.above(200);
      expect(r).to.be.below(50);
    });

    it('takes the frame at 0.2 s, before the switch, as red', async () => {
      const [r, , b] = await meanColour(await extractFrame(redThenBlue, 0.2));
      expect(r).to.be.above(200);
      expect(b).to.be.below(50);
    });

    it('returns a PNG of the clip size', async () => {
      const { format, width, height } = await sharp(await extractFrame(smallClip, 0.5)).metadata();
      expect([format, width, height]).to.deep.equal(['png', 320, 240]);
    });

    it('takes the last frame of a clip shorter than the requested time', async () => {
      const tenthOfASecond = await colourSwitchClip(0.04, 0.12);
      const [r, , b] = await meanColour(await extractFrame(tenthOfASecond, 0.5));
      expect(b, 'the clip ends blue').to.be.above(200);
      expect(r).to.be.below(50);
    });

    it('throws UnreadableVideoError for bytes that are not a video', async () => {
      expect(await rejectionOf(extractFrame(Buffer.from('garbage'), 0.5))).to.be.instanceOf(UnreadableVideoError);
    });
  });

  describe('makePreviewClip', () => {
    it('makes an H.264 MP4 with 720 on the short side, at most 60 fps, and no audio', async () => {
      const info = await probeVideo(await makePreviewClip(bigFastClip));
      expect(info).to.include({ videoCodec: 'h264', width: 960, height: 720, fps: 60, hasAudio: false });
    });

    it('puts the index (moov) before the media data (mdat): faststart', async () => {
      const preview = await makePreviewClip(smallClip);
      expect(preview.indexOf('moov')).to.be.within(0, preview.indexOf('mdat'));
    });

    it('keeps a 320x240 clip at 320x240: never upscales', async () => {
      expect(await probeVideo(await makePreviewClip(smallClip))).to.include({ width: 320, height: 240, fps: 30 });
    });

    it('turns a phone clip tagged with a rotation upright', async () => {
      const info = await probeVideo(await makePreviewClip(await rotatedCopy(smallClip)));
      expect([info.width, info.height]).to.deep.equal([240, 320]);
    });

    it('throws UnreadableVideoError for bytes that are not a video', async () => {
      expect(await rejectionOf(makePreviewClip(Buffer.from('garbage')))).to.be.instanceOf(UnreadableVideoError);
    });
  });

  describe('makeAnimationLoop', () => {
    it('makes a separate H.264 MP4 with 480 on the short side, at most 30 fps, and no audio', async () => {
      const [loop, preview] = await Promise.all([makeAnimationLoop(bigFastClip), makePreviewClip(bigFastClip)]);
      expect(await probeVideo(loop)).to.include({ videoCodec: 'h264', width: 640, height: 480, fps: 30, hasAudio: false });
      expect(loop.equals(preview)).to.equal(false);
    });
  });

  describe('makeAnimatedWebp', () => {
    it('makes an animated WebP that loops forever, 480 on the short side, at most 15 fps', async () => {
      const metadata = await sharp(await makeAnimatedWebp(bigFastClip)).metadata();
      expect(metadata.format).to.equal('webp');
      expect([metadata.width, metadata.height]).to.deep.equal([640, 480]);
      expect(metadata.loop, 'loop count 0 means forever').to.equal(0);
      expect(metadata.pages).to.be.within(14, 16);
      for (const delayMs of metadata.delay ?? []) expect(delayMs).to.be.at.least(1000 / 15 - 1);
    });
  });

  describe('temp files', () => {
    let tempDir: string;
    let previousTmpdir: string | undefined;

    beforeEach(() => {
      previousTmpdir = process.env.TMPDIR;
      tempDir = mkdtempSync(path.join(os.tmpdir(), 'media-test-'));
      process.env.TMPDIR = tempDir;
    });

    afterEach(() => {
      if (previousTmpdir === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previousTmpdir;
      rmSync(tempDir, { recursive: true, force: true });
    });

    it('leaves nothing in the temp directory after success or failure', async () => {
      await extractFrame(smallClip, 0.5);
      await makeAnimationLoop(smallClip);
      await rejectionOf(makePreviewClip(Buffer.from('garbage')));
      expect(await readdir(tempDir)).to.deep.equal([]);
    });
  });
});
