import { execFile } from 'node:child_process';
import { FfmpegError } from './errors';
import { ffmpegPath } from './ffmpeg';

/** A stuck encode must not hold a worker forever; previews are short clips that take seconds. */
const TIMEOUT_MS = 5 * 60_000;
const STDERR_TAIL_CHARS = 2_000;

export interface FfmpegLog {
  exitCode: number;
  stderr: string;
}

/** Runs ffmpeg and returns its exit code and log; rejects only when it could not run to an exit code. */
export function ffmpegLog(args: string[]): Promise<FfmpegLog> {
  return new Promise((resolve, reject) => {
    execFile(
      ffmpegPath(),
      ['-hide_banner', '-nostdin', '-y', ...args],
      { timeout: TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' },
      (error, _stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          reject(new FfmpegError(`ffmpeg did not finish: ${error.message}`, stderr.slice(-STDERR_TAIL_CHARS), { cause: error }));
          return;
        }
        resolve({ exitCode: error ? (error.code as number) : 0, stderr });
      },
    );
  });
}

/** Runs ffmpeg quietly and throws an FfmpegError, with the end of its log, unless it succeeds. */
export async function runFfmpeg(args: string[]): Promise<void> {
  const { exitCode, stderr } = await ffmpegLog(['-loglevel', 'error', ...args]);
  if (exitCode !== 0) {
    throw new FfmpegError(`ffmpeg exited with code ${exitCode}: ${stderr.trim().split('\n').pop() ?? ''}`, stderr.slice(-STDERR_TAIL_CHARS));
  }
}

/** The `Duration: hh:mm:ss.ss` of the input summary `ffmpeg -i` prints, in seconds; null when absent (or `N/A`). */
export function statedDurationS(stderr: string): number | null {
  const duration = /Duration: (\d+):(\d+):(\d+(?:\.\d+)?)/.exec(stderr);
  return duration ? Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]) : null;
}
