import { rm } from 'node:fs/promises';
import type sharp from 'sharp';
import { ffmpegCommand } from '../../media/ffmpeg';
import { stillImage, type ModelInput, type Still } from './input-photo';
import { writeModerationVerdict } from './moderation-model';
import { answerToPrompt, drawPrompt, editPhoto } from './studio-models';

/**
 * What a simulated model does with the first photo and the prompt. A `renders` model writes its result to
 * `outputPath`; a heavy one runs in the background under a concurrency limit, a light one before the
 * submission is answered. One that `needsPhoto` refuses a task without photos.
 */
export type ModelBehaviour =
  | {
      kind: 'renders';
      extension: string;
      contentType: string;
      heavy: boolean;
      needsPhoto: boolean;
      /** Takes a photo it cannot decode as its input (null `still`) instead of refusing the task: the moderation model judges it. */
      judgesPhotos?: boolean;
      /** A language model's answer: Replicate's and fal's fronts give it inline, as those providers do; the native protocol as a file. */
      answersText?: boolean;
      render(input: ModelInput, outputPath: string, signal: AbortSignal): Promise<void>;
    }
  | { kind: 'fails'; errorType: string; message: string };

type RenderFromPhoto = (still: Still, outputPath: string, signal: AbortSignal) => Promise<void>;

/** The effects' models read the first photo only (a task without one is refused before it renders). */
const fromPhoto = (render: RenderFromPhoto) => (input: ModelInput, outputPath: string, signal: AbortSignal) => render(input.still!, outputPath, signal);

const VIDEO_SECONDS = 2;
const VIDEO_FPS = 24;

const behaviours = new Map<string, ModelBehaviour>([
  ['image', { kind: 'renders', extension: 'jpg', contentType: 'image/jpeg', heavy: false, needsPhoto: true, render: fromPhoto(sepiaJpeg) }],
  ['sticker', { kind: 'renders', extension: 'png', contentType: 'image/png', heavy: false, needsPhoto: true, render: fromPhoto(cutOutPng) }],
  ['video', { kind: 'renders', extension: 'mp4', contentType: 'video/mp4', heavy: true, needsPhoto: true, render: fromPhoto(loopedMp4) }],
  // The studio's models (docs/mobile.md, "Studio, voice input, queue position and cancel").
  ['text_to_image', { kind: 'renders', extension: 'jpg', contentType: 'image/jpeg', heavy: false, needsPhoto: false, render: drawPrompt }],
  ['photo_edit', { kind: 'renders', extension: 'jpg', contentType: 'image/jpeg', heavy: false, needsPhoto: true, render: editPhoto }],
  ['ask', { kind: 'renders', extension: 'txt', contentType: 'text/plain; charset=utf-8', heavy: false, needsPhoto: false, answersText: true, render: answerToPrompt }],
  // The marketplace's moderation model (docs/mobile.md, "The marketplace of user effects"): a verdict as JSON.
  ['moderation', { kind: 'renders', extension: 'json', contentType: 'application/json', heavy: false, needsPhoto: false, judgesPhotos: true, answersText: true, render: writeModerationVerdict }],
  ['safety', { kind: 'fails', errorType: 'safety', message: 'the content was refused by the safety filter' }],
  ['error', { kind: 'fails', errorType: 'internal_error', message: 'the model failed' }],
]);

/** The behaviour of a model name, or null for a model the provider does not have. */
export function modelBehaviour(model: string): ModelBehaviour | null {
  return behaviours.get(model) ?? null;
}

/** Sepia: a matrix over the channels is several times cheaper than a tint through another colour space. */
const SEPIA: sharp.Matrix3x3 = [
  [0.393, 0.769, 0.189],
  [0.349, 0.686, 0.168],
  [0.272, 0.534, 0.131],
];

async function sepiaJpeg(still: Still, outputPath: string): Promise<void> {
  await stillImage(still).recomb(SEPIA).jpeg({ quality: 80 }).toFile(outputPath);
}

/** The photo inside an ellipse on a transparent background, like a cut-out sticker. */
async function cutOutPng(still: Still, outputPath: string): Promise<void> {
  const { width, height } = still;
  const mask = Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}">` +
      `<ellipse cx="${width / 2}" cy="${height / 2}" rx="${width / 2}" ry="${height / 2}" fill="#fff"/></svg>`,
  );
  await stillImage(still).ensureAlpha().composite([{ input: mask, blend: 'dest-in' }]).png().toFile(outputPath);
}

/** The still looped into a short H.264 clip that phones play and can start before it has fully arrived. */
async function loopedMp4(still: Still, outputPath: string, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  const stillPath = `${outputPath}.still.jpg`;
  try {
    await stillImage(still).jpeg({ quality: 90 }).toFile(stillPath);
    signal.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const command = ffmpegCommand(stillPath)
        .inputOptions(['-loop', '1', '-framerate', String(VIDEO_FPS)])
        .outputOptions([
          ...['-t', String(VIDEO_SECONDS), '-an'],
          ...['-c:v', 'libx264', '-preset', 'veryfast', '-tune', 'stillimage', '-crf', '28', '-threads', '2'],
          ...['-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-f', 'mp4'],
        ]);
      const kill = () => command.kill('SIGKILL');
      const settle = (error?: Error) => {
        signal.removeEventListener('abort', kill);
        if (error) reject(error);
        else resolve();
      };
      signal.addEventListener('abort', kill, { once: true });
      command.on('end', () => settle()).on('error', settle).save(outputPath);
    });
  } finally {
    await rm(stillPath, { force: true });
  }
}
