import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UnreadableVideoError } from './errors';
import { ffmpegLog, statedDurationS } from './ffmpeg-run';
import { withTempDir } from './temp-dir';

export interface VideoInfo {
  /** Displayed size: a rotation tag from a phone is already applied, as ffmpeg applies it when transcoding. */
  width: number;
  height: number;
  durationS: number;
  /** Null when ffmpeg reports no rate for the stream. */
  fps: number | null;
  /** ffmpeg's codec name of the first video stream, e.g. `h264`. */
  videoCodec: string;
  hasAudio: boolean;
}

export async function probeVideo(buffer: Buffer): Promise<VideoInfo> {
  return withTempDir(async (dir) => {
    const input = path.join(dir, 'input');
    await writeFile(input, buffer);
    return probeVideoFile(input);
  });
}

/** The npm ffmpeg ships without ffprobe, so this reads the input summary `ffmpeg -i` prints before it stops. */
export async function probeVideoFile(file: string): Promise<VideoInfo> {
  const { stderr } = await ffmpegLog(['-i', file]);
  return parseInputSummary(stderr);
}

const STREAM_LINE = /^\s*Stream #\d+:\d+.*?: (Video|Audio): .*$/gm;

/** Parses the `Input #0` summary printed by `ffmpeg -i`; throws UnreadableVideoError when it has no video stream. */
export function parseInputSummary(stderr: string): VideoInfo {
  const streams = [...stderr.matchAll(STREAM_LINE)];
  const video = streams.find((stream) => stream[1] === 'Video');
  if (!video) {
    const reason = stderr.trim().split('\n').filter((line) => !line.startsWith('At least one output')).pop();
    throw new UnreadableVideoError(`the file is not a readable video: ${reason ?? 'no video stream'}`);
  }
  const line = video[0];
  const codec = /Video: (\w+)/.exec(line);
  // `, 1920x1080` and not the `0x31637661` of the codec tag.
  const size = /, (\d+)x(\d+)\b/.exec(line);
  const durationS = statedDurationS(stderr);
  if (!codec || !size || durationS === null) throw new UnreadableVideoError('the video has no size or no duration');

  const [width, height] = [Number(size[1]), Number(size[2])];
  const quarterTurn = Math.abs(rotationAfter(stderr, video.index ?? 0)) % 180 === 90;
  return {
    width: quarterTurn ? height : width,
    height: quarterTurn ? width : height,
    durationS,
    fps: frameRate(line),
    videoCodec: codec[1],
    hasAudio: streams.some((stream) => stream[1] === 'Audio'),
  };
}

function frameRate(streamLine: string): number | null {
  const rate = /, (\d+(?:\.\d+)?)(k?) (?:fps|tbr)\b/.exec(streamLine);
  if (!rate) return null;
  return Number(rate[1]) * (rate[2] === 'k' ? 1000 : 1);
}

/** Degrees from the side data or `rotate` tag printed under the video stream, 0 when there is none. */
function rotationAfter(stderr: string, streamStart: number): number {
  const rest = stderr.slice(streamStart).split('\n').slice(1);
  const nextStream = rest.findIndex((line) => /^\s*Stream #/.test(line));
  const block = (nextStream === -1 ? rest : rest.slice(0, nextStream)).join('\n');
  const rotation = /rotation of (-?\d+(?:\.\d+)?) degrees/.exec(block) ?? /rotate\s*:\s*(-?\d+)/.exec(block);
  return rotation ? Math.round(Number(rotation[1])) : 0;
}
