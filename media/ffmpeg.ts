import { execFileSync } from 'node:child_process';
import ffmpeg from 'fluent-ffmpeg';

let resolved: string | null = null;

/** The system's ffmpeg when one is on PATH (newer, faster), else the static binary shipped on npm. */
export function ffmpegPath(): string {
  if (resolved) return resolved;
  try {
    execFileSync('ffmpeg', ['-version'], { stdio: 'ignore' });
    resolved = 'ffmpeg';
  } catch {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    resolved = (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
  }
  return resolved;
}

/** A fluent-ffmpeg command bound to the resolved binary. */
export function ffmpegCommand(input?: string): ffmpeg.FfmpegCommand {
  const command = input === undefined ? ffmpeg() : ffmpeg(input);
  return command.setFfmpegPath(ffmpegPath());
}
