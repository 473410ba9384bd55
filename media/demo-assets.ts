import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import type { Size } from './dimensions';
import { runFfmpeg } from './ffmpeg-run';
import { withTempDir } from './temp-dir';

/** FNV-1a, so a slug always gets the same colours on every machine. */
function hashOf(text: string): number {
  let hash = 0x811c9dc5;
  for (const char of text) hash = Math.imul(hash ^ char.codePointAt(0)!, 0x01000193) >>> 0;
  return hash;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (char) => `&#${char.codePointAt(0)};`);
}

/** Colourful JPEG poster with the slug written on it, colours derived from the slug. */
export async function demoPoster(slug: string, { width, height }: Size): Promise<Buffer> {
  const hue = hashOf(slug) % 360;
  const fontSize = Math.round(Math.min(width, height) / 10);
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">
  <defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
    <stop offset="0" stop-color="hsl(${hue},80%,55%)"/><stop offset="1" stop-color="hsl(${(hue + 140) % 360},75%,35%)"/>
  </linearGradient></defs>
  <rect width="100%" height="100%" fill="url(#g)"/>
  <circle cx="${width * 0.25}" cy="${height * 0.3}" r="${Math.min(width, height) * 0.18}" fill="hsl(${(hue + 60) % 360},90%,70%)" opacity="0.7"/>
  <circle cx="${width * 0.75}" cy="${height * 0.7}" r="${Math.min(width, height) * 0.24}" fill="hsl(${(hue + 200) % 360},90%,60%)" opacity="0.6"/>
  <text x="50%" y="50%" font-family="DejaVu Sans, sans-serif" font-size="${fontSize}" font-weight="bold" fill="#ffffff"
    text-anchor="middle" dominant-baseline="middle">${escapeXml(slug)}</text>
</svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
}

export interface DemoClipOptions extends Size {
  seconds: number;
  fps?: number;
  /** A sine tone, for checking that previews drop the sound. */
  withAudio?: boolean;
}

/** H.264 MP4 of ffmpeg's moving test pattern. */
export async function demoClip({ seconds, width, height, fps = 30, withAudio = false }: DemoClipOptions): Promise<Buffer> {
  return withTempDir(async (dir) => {
    const output = path.join(dir, 'clip.mp4');
    const audio = withAudio ? ['-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}`, '-c:a', 'aac'] : [];
    await runFfmpeg([
      ...['-f', 'lavfi', '-i', `testsrc=size=${width}x${height}:rate=${fps}:duration=${seconds}`],
      ...audio,
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', output],
    ]);
    return readFile(output);
  });
}

/** A 640x800 JPEG standing in for a face photo: a drawn face on a plain backdrop. */
export async function demoPhoto(): Promise<Buffer> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="800">
  <rect width="100%" height="100%" fill="#8fb8d8"/>
  <ellipse cx="320" cy="760" rx="260" ry="160" fill="#3a5a80"/>
  <ellipse cx="320" cy="380" rx="170" ry="220" fill="#e8b894"/>
  <path d="M150 330 Q320 90 490 330 Q470 180 320 160 Q170 180 150 330 Z" fill="#4a3020"/>
  <ellipse cx="255" cy="370" rx="22" ry="14" fill="#ffffff"/><circle cx="255" cy="370" r="9" fill="#2a4a30"/>
  <ellipse cx="385" cy="370" rx="22" ry="14" fill="#ffffff"/><circle cx="385" cy="370" r="9" fill="#2a4a30"/>
  <path d="M320 390 L305 450 L335 450" fill="none" stroke="#b88a6a" stroke-width="5"/>
  <path d="M265 500 Q320 540 375 500" fill="none" stroke="#a04040" stroke-width="9" stroke-linecap="round"/>
</svg>`;
  return sharp(Buffer.from(svg)).jpeg({ quality: 90 }).toBuffer();
}
