import { expect } from 'chai';
import { demoClip } from '../../media/demo-assets';
import { UnreadableVideoError } from '../../media/errors';
import { parseInputSummary, probeVideo } from '../../media/video-probe';
import { rejectionOf, rotatedCopy } from './fixtures';

const PHONE_CLIP_SUMMARY = `Input #0, mov,mp4,m4a,3gp,3g2,mj2, from 'input':
  Metadata:
    major_brand     : qt
  Duration: 00:01:02.50, start: 0.000000, bitrate: 9000 kb/s
    Stream #0:0(und): Video: hevc (Main) (hvc1 / 0x31637668), yuv420p(tv, bt709), 1920x1080, 8000 kb/s, 29.97 fps, 29.97 tbr, 600 tbn, 600 tbc (default)
    Metadata:
      rotate          : 90
    Side data:
      displaymatrix: rotation of -90.00 degrees
    Stream #0:1(und): Audio: aac (LC) (mp4a / 0x6134706D), 44100 Hz, stereo, fltp, 256 kb/s (default)
At least one output file must be specified
`;

describe('media/video-probe', () => {
  describe('parseInputSummary', () => {
    it('reads size, duration, rate, codec and audio, and swaps the size of a clip rotated a quarter turn', () => {
      expect(parseInputSummary(PHONE_CLIP_SUMMARY)).to.deep.equal({
        width: 1080,
        height: 1920,
        durationS: 62.5,
        fps: 29.97,
        videoCodec: 'hevc',
        hasAudio: true,
      });
    });

    it('does not take the hex codec tag (0x31637668) for the size', () => {
      expect(parseInputSummary(PHONE_CLIP_SUMMARY.replace(/rotate.*|displaymatrix.*/g, ''))).to.include({ width: 1920, height: 1080 });
    });

    it('throws UnreadableVideoError when there is no video stream', () => {
      const audioOnly = PHONE_CLIP_SUMMARY.replace(/^.*Video:.*$/m, '');
      expect(() => parseInputSummary(audioOnly)).to.throw(UnreadableVideoError);
    });
  });

  describe('probeVideo', function () {
    this.timeout(20_000);

    it('probes a real 1 s 320x240 clip with sound', async () => {
      const info = await probeVideo(await demoClip({ seconds: 1, width: 320, height: 240, fps: 30, withAudio: true }));
      expect(info).to.include({ width: 320, height: 240, fps: 30, videoCodec: 'h264', hasAudio: true });
      expect(info.durationS).to.be.closeTo(1, 0.1);
    });

    it('reports a phone clip tagged with a rotation in its upright size', async () => {
      const info = await probeVideo(await rotatedCopy(await demoClip({ seconds: 0.2, width: 160, height: 96 })));
      expect([info.width, info.height]).to.deep.equal([96, 160]);
    });

    it('throws UnreadableVideoError for bytes that are not a video', async () => {
      expect(await rejectionOf(probeVideo(Buffer.from('not a video at all')))).to.be.instanceOf(UnreadableVideoError);
    });
  });
});
