import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { evenSizeForShortSide } from './dimensions';
import { UnreadableVideoError } from './errors';
import { runFfmpeg } from './ffmpeg-run';
import { probeVideoFile, type VideoInfo } from './video-probe';
import { withTempDir } from './temp-dir';

interface VideoOutput {
  shortSide: number;
  maxFps: number;
  /** ffmpeg arguments for the encoder and container, after the filters. */
  encoding: string[];
}

function h264(crf: number): string[] {
  return [
    ...['-c:v', 'libx264', '-preset', 'medium', '-crf', String(crf)],
    // yuv420p and the high profile play on every phone, whatever the source was (10-bit, 4:4:4).
    ...['-pix_fmt', 'yuv420p', '-profile:v', 'high'],
    // The index at the start lets a player begin before the whole file has arrived.
    ...['-movflags', '+faststart', '-f', 'mp4'],
  ];
}

const PREVIEW_CLIP: VideoOutput = { shortSide: 720, maxFps: 60, encoding: h264(23) };
const ANIMATION_LOOP: VideoOutput = { shortSide: 480, maxFps: 30, encoding: h264(26) };
const ANIMATED_WEBP: VideoOutput = {
  shortSide: 480,
  maxFps: 15,
  // The webp muxer plays once by default; `-loop 0` repeats forever.
  encoding: ['-c:v', 'libwebp_anim', '-lossless', '0', '-quality', '70', '-loop', '0', '-f', 'webp'],
};

/** Writes the video to a temp file, probes it, and hands both to `work`; the files are removed afterwards. */
async function withVideoFile<T>(
  buffer: Buffer,
  work: (input: string, info: VideoInfo, dir: string) => Promise<T>,
): Promise<T> {
  return withTempDir(async (dir) => {
    const input = path.join(dir, 'input');
    await writeFile(input, buffer);
    return work(input, await probeVideoFile(input), dir);
  });
}

/**
 * PNG of the frame shown at `atSeconds`. Seeking before `-i` jumps to the nearest keyframe and decodes up to the
 * exact time, which is fast and accurate. A time past the last frame is moved back to the last frame.
 */
export async function extractFrame(videoBuffer: Buffer, atSeconds: number): Promise<Buffer> {
  return withVideoFile(videoBuffer, async (input, info, dir) => {
    const frameDurationS = 1 / (info.fps ?? 25);
    const seconds = Math.max(0, Math.min(atSeconds, info.durationS - frameDurationS));
    const output = path.join(dir, 'frame.png');
    await runFfmpeg(['-ss', seconds.toFixed(3), '-i', input, '-frames:v', '1', '-f', 'image2', '-c:v', 'png', output]);
    const frame = await readFile(output).catch(() => null);
    if (!frame?.length) throw new UnreadableVideoError(`the video has no frame at ${seconds.toFixed(3)} s`);
    return frame;
  });
}

async function transcode(videoBuffer: Buffer, target: VideoOutput): Promise<Buffer> {
  return withVideoFile(videoBuffer, async (input, info, dir) => {
    const { width, height } = evenSizeForShortSide(info, target.shortSide);
    const filters = [`scale=${width}:${height}`];
    if (info.fps !== null && info.fps > target.maxFps) filters.push(`fps=${target.maxFps}`);
    const output = path.join(dir, 'output');
    await runFfmpeg([
      ...['-i', input, '-an', '-sn', '-dn'],
      // Phone clips carry the place and device they were shot with.
      ...['-map_metadata', '-1'],
      ...['-vf', filters.join(',')],
      ...target.encoding,
      output,
    ]);
    return readFile(output);
  });
}

/** H.264 MP4, 720 on the short side (never upscaled), at most 60 fps, no audio, index at the start. */
export function makePreviewClip(videoBuffer: Buffer): Promise<Buffer> {
  return transcode(videoBuffer, PREVIEW_CLIP);
}

/** H.264 MP4 loop for grids, 480 on the short side (never upscaled), at most 30 fps, no audio, index at the start. */
export function makeAnimationLoop(videoBuffer: Buffer): Promise<Buffer> {
  return transcode(videoBuffer, ANIMATION_LOOP);
}

/** Animated WebP that loops forever, 480 on the short side (never upscaled), at most 15 fps. */
export function makeAnimatedWebp(videoBuffer: Buffer): Promise<Buffer> {
  return transcode(videoBuffer, ANIMATED_WEBP);
}
