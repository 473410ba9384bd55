import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import sharp from 'sharp';
import { stillImage } from './input-photo';
import type { ModelInput } from './input-photo';

/**
 * The simulator's studio models (docs/mobile.md, "Studio, voice input, queue position and cancel"), deterministic so tests can tell one prompt's
 * result from another's: `text_to_image` draws a picture from the prompt, `photo_edit` changes the
 * first photo as the prompt says, `ask` answers a text derived from the prompt.
 */

const DRAWING_SIZE = 256;

/** Bytes of the prompt's SHA-256: the same prompt always makes the same picture. */
function promptBytes(prompt: string): Buffer {
  return createHash('sha256').update(prompt).digest();
}

function colour(bytes: Buffer, at: number): string {
  return `#${bytes.subarray(at, at + 3).toString('hex')}`;
}

/** A gradient and three circles whose colours and places come from the prompt. */
export async function drawPrompt(input: ModelInput, outputPath: string): Promise<void> {
  const bytes = promptBytes(input.prompt);
  const circles = [0, 1, 2].map((index) => {
    const at = 8 + index * 6;
    const [x, y, r] = [bytes[at], bytes[at + 1], 16 + (bytes[at + 2] % 48)];
    return `<circle cx="${x}" cy="${y}" r="${r}" fill="${colour(bytes, at + 3)}"/>`;
  }).join('');
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${DRAWING_SIZE}" height="${DRAWING_SIZE}">`
    + `<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="${colour(bytes, 0)}"/>`
    + `<stop offset="1" stop-color="${colour(bytes, 3)}"/></linearGradient></defs>`
    + `<rect width="100%" height="100%" fill="url(#g)"/>${circles}</svg>`;
  await sharp(Buffer.from(svg)).jpeg({ quality: 85 }).toFile(outputPath);
}

/** The first photo in negative, its hue turned by an angle the prompt picks. */
export async function editPhoto(input: ModelInput, outputPath: string): Promise<void> {
  const hue = promptBytes(input.prompt).readUInt16BE(0) % 360;
  await stillImage(input.still!).negate().modulate({ hue }).jpeg({ quality: 80 }).toFile(outputPath);
}

/** An answer that quotes the prompt whole (a long prompt makes a long answer), in the prompt's language. */
export async function answerToPrompt(input: ModelInput, outputPath: string): Promise<void> {
  const russian = /[а-яё]/i.test(input.prompt);
  const photo = input.still ? `${input.still.width}×${input.still.height}` : null;
  const answer = russian
    ? `Совет стилиста${photo ? ` по фото ${photo}` : ''} на вопрос «${input.prompt}»: выбирайте то, в чём вам удобно.`
    : `Stylist's advice${photo ? ` on your ${photo} photo` : ''} for "${input.prompt}": wear what you feel at ease in.`;
  await writeFile(outputPath, answer, 'utf8');
}
