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
export async function resultFileType(body: Buffer, outputType: OutputType): Promise<FileType | null> {
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
