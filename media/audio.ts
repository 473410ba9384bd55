import { readFile } from 'node:fs/promises';
import { AudioTooLongError, UnreadableAudioError } from './errors';
import { ffmpegLog, statedDurationS } from './ffmpeg-run';

/**
 * Voice recordings (docs/mobile.md, "Studio, voice input, queue position and cancel"): the format read from the content with ffmpeg (the npm build
 * has no ffprobe, so its `-i` summary is read, as for videos), and the audio decoded to what speech
 * recognition takes, 16 kHz mono 16-bit PCM WAV.
 */
export type AudioFormat = 'wav' | 'mp3' | 'ogg_opus' | 'webm_opus' | 'm4a_aac' | 'flac';

export interface AudioProbe {
  format: AudioFormat;
  /** As the container states it; null when it does not (a phone's or a browser's streamed WebM). */
  statedDurationS: number | null;
}

export interface SpeechAudio {
  /** 16 kHz mono s16le WAV. */
  wav: Buffer;
  durationMs: number;
}

const SPEECH_SAMPLE_RATE = 16_000;

/** The accepted formats as ffmpeg names them: its demuxer and the codec of the audio stream. */
const accepted: { format: AudioFormat; demuxer: string; codec: (codec: string) => boolean }[] = [
  { format: 'wav', demuxer: 'wav', codec: () => true },
  { format: 'mp3', demuxer: 'mp3', codec: (codec) => codec === 'mp3' },
  { format: 'ogg_opus', demuxer: 'ogg', codec: (codec) => codec === 'opus' },
  { format: 'webm_opus', demuxer: 'matroska,webm', codec: (codec) => codec === 'opus' },
  { format: 'm4a_aac', demuxer: 'mov,mp4,m4a,3gp,3g2,mj2', codec: (codec) => codec === 'aac' },
  { format: 'flac', demuxer: 'flac', codec: (codec) => codec === 'flac' },
];

/** What the file is, by its content; UnreadableAudioError for anything but the accepted formats. */
export async function probeAudioFile(file: string): Promise<AudioProbe> {
  const { stderr } = await ffmpegLog(['-i', file]);
  return parseAudioSummary(stderr);
}

/** Parses the `Input #0` summary printed by `ffmpeg -i`. */
export function parseAudioSummary(stderr: string): AudioProbe {
  const demuxer = /^Input #0, (.+?), from '/m.exec(stderr)?.[1];
  if (!demuxer) throw new UnreadableAudioError('the file is not readable as audio');
  const streams = [...stderr.matchAll(/^\s*Stream #0:\d+.*?: (Audio|Video): (\w+).*$/gm)];
  // A cover picture in an MP3 or M4A is a video stream marked as an attached picture; a real video is not a recording.
  if (streams.some((stream) => stream[1] === 'Video' && !stream[0].includes('(attached pic)'))) {
    throw new UnreadableAudioError('the file is a video, not an audio recording');
  }
  const codec = streams.find((stream) => stream[1] === 'Audio')?.[2];
  if (!codec) throw new UnreadableAudioError('the file has no audio');
  const format = accepted.find((candidate) => candidate.demuxer === demuxer && candidate.codec(codec))?.format;
  if (!format) throw new UnreadableAudioError(`${codec} audio in ${demuxer} is not an accepted format (WAV, MP3, OGG/Opus, WebM/Opus, M4A/AAC, FLAC)`);
  return { format, statedDurationS: statedDurationS(stderr) };
}

/**
 * Decodes the first audio stream to 16 kHz mono PCM WAV, at most a little past `maxS` (so a longer
 * recording costs no more than that to find out): AudioTooLongError when the audio runs past `maxS`,
 * UnreadableAudioError when it does not decode or holds no sound at all. The length is the decoded
 * one, since a streamed recording's container may not state it.
 */
export async function decodeForSpeech(file: string, output: string, maxS: number): Promise<SpeechAudio> {
  const { exitCode, stderr } = await ffmpegLog([
    '-loglevel', 'error', '-i', file,
    '-map', '0:a:0', '-vn', '-ac', '1', '-ar', String(SPEECH_SAMPLE_RATE), '-c:a', 'pcm_s16le',
    '-t', String(maxS + 0.5), '-map_metadata', '-1', '-f', 'wav', output,
  ]);
  if (exitCode !== 0) throw new UnreadableAudioError(`the audio does not decode: ${stderr.trim().split('\n').pop() ?? ''}`);
  const wav = await readFile(output);
  const durationMs = wavDurationMs(wav) ?? 0;
  if (durationMs <= 0) throw new UnreadableAudioError('the audio holds no sound');
  if (durationMs > maxS * 1000) throw new AudioTooLongError(maxS);
  return { wav, durationMs };
}

/** Duration of a RIFF/WAVE file from its `fmt ` and `data` chunks; null when it is not one. */
export function wavDurationMs(wav: Buffer): number | null {
  if (wav.length < 12 || wav.toString('latin1', 0, 4) !== 'RIFF' || wav.toString('latin1', 8, 12) !== 'WAVE') return null;
  let bytesPerSecond: number | null = null;
  for (let offset = 12; offset + 8 <= wav.length;) {
    const id = wav.toString('latin1', offset, offset + 4);
    const size = wav.readUInt32LE(offset + 4);
    if (id === 'fmt ' && offset + 20 <= wav.length) bytesPerSecond = wav.readUInt32LE(offset + 16);
    if (id === 'data') {
      if (!bytesPerSecond) return null;
      // A streamed WAV may state 0xFFFFFFFF for an unknown length: count what is there.
      const dataBytes = Math.min(size, wav.length - offset - 8);
      return Math.round((dataBytes / bytesPerSecond) * 1000);
    }
    offset += 8 + size + (size % 2);
  }
  return null;
}
