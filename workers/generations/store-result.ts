import type { OutputType } from '../../db/generations/model';
import { UnreadableImageError, UnreadableVideoError, UnsupportedImageFormatError } from '../../media/errors';
import { imageFileType, videoFileType, type FileType } from '../../media/file-types';
import { resultKey } from '../../media/object-keys';
import type { Storage } from '../../media/storage';

/**
 * The file type of a result by its real content, not by what the provider said: an image keeps its
 * own format (a transparent PNG stays PNG), a video must be an MP4. Null when it is neither: the
 * generation fails as `result_rejected`.
 */
export async function resultFileType(body: Buffer, outputType: Exclude<OutputType, 'text'>): Promise<FileType | null> {
  try {
    return outputType === 'video' ? videoFileType(body) : await imageFileType(body);
  } catch (error) {
    if (error instanceof UnreadableImageError || error instanceof UnreadableVideoError || error instanceof UnsupportedImageFormatError) return null;
    throw error;
  }
}

/** `results/<user_id>/<generation_id>.<ext>`, written with its real content type. */
export async function storeResult(storage: Storage, generation: { id: string; user_id: string }, body: Buffer, type: FileType): Promise<string> {
  const key = resultKey(generation.user_id, generation.id, type.extension);
  await storage.put(key, body, type.contentType);
  return key;
}

/** Contract B, limits: a studio text answer is at most 1000 characters. */
export const maxResultTextLength = 1000;

/**
 * The answer of a text task from the provider's result file: UTF-8 text, trimmed, cut to 1000
 * characters (whole code points) when the provider said more. Null when it is not UTF-8 text or is
 * empty: the generation fails as `result_rejected`.
 */
export function resultText(body: Buffer): string | null {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body).trim();
  } catch {
    return null;
  }
  if (text === '' || text.includes('\u0000')) return null;
  const characters = Array.from(text);
  return characters.length <= maxResultTextLength ? text : characters.slice(0, maxResultTextLength).join('').trimEnd();
}
