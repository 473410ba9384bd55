import { expect } from 'chai';
import { parseAudioSummary, wavDurationMs } from '../../media/audio';
import { UnreadableAudioError } from '../../media/errors';
import { pcmWav } from '../audio';

/** `ffmpeg -i` summaries as the bundled 4.x build prints them. */
const summary = (input: string, streams: string[], duration = '00:00:02.00') =>
  `Input #0, ${input}, from 'recording':\n  Duration: ${duration}, start: 0.000000, bitrate: 64 kb/s\n${streams.map((stream) => `    ${stream}`).join('\n')}\n`;

describe('voice recordings (media/audio.ts)', () => {
  it('names each accepted format by demuxer and codec, with the stated duration', () => {
    expect(parseAudioSummary(summary('wav', ['Stream #0:0: Audio: pcm_s16le ([1][0][0][0] / 0x0001), 48000 Hz, mono, s16']))).to.deep.equal({ format: 'wav', statedDurationS: 2 });
    expect(parseAudioSummary(summary('mp3', ['Stream #0:0: Audio: mp3, 48000 Hz, mono, fltp, 64 kb/s'])).format).to.equal('mp3');
    expect(parseAudioSummary(summary('ogg', ['Stream #0:0: Audio: opus, 48000 Hz, mono, fltp'])).format).to.equal('ogg_opus');
    expect(parseAudioSummary(summary('matroska,webm', ['Stream #0:0: Audio: opus, 48000 Hz, mono, fltp (default)'], 'N/A'))).to.deep.equal({ format: 'webm_opus', statedDurationS: null });
    expect(parseAudioSummary(summary('mov,mp4,m4a,3gp,3g2,mj2', ['Stream #0:0(und): Audio: aac (LC) (mp4a / 0x6134706D), 48000 Hz, mono, fltp'])).format).to.equal('m4a_aac');
    expect(parseAudioSummary(summary('flac', ['Stream #0:0: Audio: flac, 48000 Hz, mono, s16'])).format).to.equal('flac');
  });

  it('accepts a cover picture beside the sound, not a real video', () => {
    const cover = 'Stream #0:1: Video: mjpeg, yuvj420p(pc, bt470bg/unknown/unknown), 300x300, 90k tbr, 90k tbn, 90k tbc (attached pic)';
    expect(parseAudioSummary(summary('mp3', ['Stream #0:0: Audio: mp3, 44100 Hz, stereo, fltp, 128 kb/s', cover])).format).to.equal('mp3');
    const video = 'Stream #0:0(und): Video: h264 (High) (avc1 / 0x31637661), yuv420p, 64x64, 25 fps';
    expect(() => parseAudioSummary(summary('mov,mp4,m4a,3gp,3g2,mj2', [video, 'Stream #0:1(und): Audio: aac (LC), 44100 Hz, mono, fltp']))).to.throw(UnreadableAudioError, /video/);
  });

  it('refuses other codecs and containers, and what ffmpeg cannot open', () => {
    expect(() => parseAudioSummary(summary('ogg', ['Stream #0:0: Audio: vorbis, 16000 Hz, mono, fltp']))).to.throw(UnreadableAudioError, /vorbis/);
    expect(() => parseAudioSummary(summary('aac', ['Stream #0:0: Audio: aac (LC), 16000 Hz, mono, fltp']))).to.throw(UnreadableAudioError);
    expect(() => parseAudioSummary('recording: Invalid data found when processing input\n')).to.throw(UnreadableAudioError);
  });

  it('reads a WAV duration from its fmt and data chunks, and nothing from other bytes', () => {
    expect(wavDurationMs(pcmWav(1.5))).to.equal(1500);
    expect(wavDurationMs(pcmWav(2, 16000))).to.equal(2000);
    expect(wavDurationMs(Buffer.from('RIFF....WAVEjunk'))).to.equal(null);
    expect(wavDurationMs(Buffer.from('not a wav at all'))).to.equal(null);
  });
});
