import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { runFfmpeg } from '../../media/ffmpeg-run';
import { withTempDir } from '../../media/temp-dir';

/** The error a promise rejects with; fails the test when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the promise to reject, it resolved');
}

export function solidJpeg(width: number, height: number, colour = '#3080c0'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: colour } }).jpeg().toBuffer();
}

/** Mean colour of an image as [r, g, b], 0..255. */
export async function meanColour(image: Buffer): Promise<number[]> {
  const { channels } = await sharp(image).stats();
  return channels.slice(0, 3).map((channel) => Math.round(channel.mean));
}

/** Small MP4 that is red until `switchAtS` and blue after, 25 fps. */
export async function colourSwitchClip(switchAtS: number, seconds: number): Promise<Buffer> {
  return withTempDir(async (dir) => {
    const output = path.join(dir, 'switch.mp4');
    await runFfmpeg([
      ...['-f', 'lavfi', '-i', `color=c=red:size=160x120:rate=25:duration=${switchAtS}`],
      ...['-f', 'lavfi', '-i', `color=c=blue:size=160x120:rate=25:duration=${seconds - switchAtS}`],
      ...['-filter_complex', '[0:v][1:v]concat=n=2:v=1:a=0'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', output],
    ]);
    return readFile(output);
  });
}

/** The same clip with the rotation tag a phone writes when it was held upright. */
export async function rotatedCopy(clip: Buffer): Promise<Buffer> {
  return withTempDir(async (dir) => {
    const input = path.join(dir, 'input.mp4');
    const output = path.join(dir, 'rotated.mp4');
    await writeFile(input, clip);
    await runFfmpeg(['-i', input, '-c', 'copy', '-metadata:s:v', 'rotate=90', output]);
    return readFile(output);
  });
}

/** A 512x512 PNG sticker: a star on a fully transparent background. */
export async function demoTransparentPng(): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512">
  <polygon points="256,40 318,190 480,196 354,298 398,456 256,366 114,456 158,298 32,196 194,190"
    fill="#ffcc33" stroke="#ffffff" stroke-width="14" stroke-linejoin="round"/>
</svg>`;
  return sharp(Buffer.from(svg)).png().toBuffer();
}
