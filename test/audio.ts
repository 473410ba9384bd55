import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { ffmpegPath } from '../media/ffmpeg';
import { withTempDir } from '../media/temp-dir';

/**
 * Voice recordings made in the tests: a 16-bit PCM WAV written by hand, every other format encoded
 * from a tone with the bundled ffmpeg.
 */
const run = promisify(execFile);

/** A 16-bit mono PCM WAV of a 440 Hz tone, header and samples written byte by byte. */
export function pcmWav(seconds: number, sampleRate = 8000): Buffer {
  const samples = Math.round(seconds * sampleRate);
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write('RIFF', 0, 'latin1');
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write('WAVE', 8, 'latin1');
  wav.write('fmt ', 12, 'latin1');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(sampleRate, 24);
  wav.writeUInt32LE(sampleRate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write('data', 36, 'latin1');
  wav.writeUInt32LE(samples * 2, 40);
  for (let index = 0; index < samples; index += 1) {
    wav.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * index) / sampleRate)), 44 + index * 2);
  }
  return wav;
}

/** How each accepted format is made from the tone: ffmpeg's output options and the file name. */
export const encodings = {
  mp3: { file: 'voice.mp3', options: ['-c:a', 'libmp3lame', '-b:a', '32k'] },
  'ogg/opus': { file: 'voice.ogg', options: ['-c:a', 'libopus', '-b:a', '24k'] },
  'webm/opus': { file: 'voice.webm', options: ['-c:a', 'libopus', '-b:a', '24k'] },
  'm4a/aac': { file: 'voice.m4a', options: ['-c:a', 'aac', '-b:a', '32k'] },
  flac: { file: 'voice.flac', options: ['-c:a', 'flac'] },
  // Not accepted: Vorbis in Ogg, and AAC without its M4A container.
  'ogg/vorbis': { file: 'voice.ogg', options: ['-c:a', 'libvorbis'] },
  'adts/aac': { file: 'voice.aac', options: ['-c:a', 'aac', '-f', 'adts'] },
} as const;

export type Encoding = keyof typeof encodings;

/** A tone of `seconds` encoded as `encoding`. `streamed`: written to a pipe, so the container cannot state its length (as a recorder's WebM). */
export async function encodedTone(encoding: Encoding, seconds: number, options: { streamed?: boolean } = {}): Promise<Buffer> {
  const { file, options: codec } = encodings[encoding];
  return withTempDir(async (dir) => {
    const output = path.join(dir, file);
    const input = ['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=16000:duration=${seconds}`];
    if (options.streamed) {
      const format = path.extname(file).slice(1);
      const { stdout } = await run(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', ...input, ...codec, '-f', format, 'pipe:1'], { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
      return stdout;
    }
    await run(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', '-y', ...input, ...codec, output]);
    return readFile(output);
  });
}

/** A short H.264 video with an AAC sound track: an MP4, not a voice recording. */
export async function videoWithSound(): Promise<Buffer> {
  return withTempDir(async (dir) => {
    const output = path.join(dir, 'clip.mp4');
    await run(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'color=c=red:s=64x64:d=1', '-f', 'lavfi', '-i', 'sine=duration=1',
      '-c:v', 'libx264', '-c:a', 'aac', '-shortest', output]);
    return readFile(output);
  });
}
