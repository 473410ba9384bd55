import type { OutputType, StoredGenerationPreview } from '../../db/generations/model';
import { isUnreachable } from '../../db/unreachable';
import { UnreadableImageError, UnreadableVideoError, UnsupportedImageFormatError } from '../../media/errors';
import type { Size } from '../../media/dimensions';
import { servedImageType, videoFileType, type FileType } from '../../media/file-types';
import type { GenerationPreview, StoreThumb } from '../../media/generation-preview';
import { probeImage } from '../../media/images';
import { previewThumbKey, resultKey } from '../../media/object-keys';
import type { Storage } from '../../media/storage';
import type { Services } from '../../services';

/**
 * The file type of a result by its real content, not by what the provider said: an image keeps its
 * own format (a transparent PNG stays PNG), a video must be an MP4. Null when it is neither: the
 * generation fails as `result_rejected`. An image's displayed size comes with it, from the same
 * read of its header, for its preview.
 */
export async function resultFileType(body: Buffer, outputType: Exclude<OutputType, 'text'>): Promise<{ type: FileType; imageSize: Size | null } | null> {
  try {
    if (outputType === 'video') return { type: videoFileType(body), imageSize: null };
    const { format, width, height } = await probeImage(body);
    return { type: servedImageType(format), imageSize: { width, height } };
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

/**
 * The preview of a result file (`previews/<user_id>/<generation_id>.webp`, for a video the
 * poster frame) as `build` makes it, its thumb stored through the `StoreThumb` it is given, or null
 * when it cannot be read or made: the generation succeeds without one (the contract). An
 * unreachable database or object store is thrown, so the step is tried again.
 */
export async function storePreview(
  { storage, log }: Pick<Services, 'storage' | 'log'>,
  generation: { id: string; user_id: string },
  build: (storeThumb: StoreThumb) => Promise<GenerationPreview>,
): Promise<StoredGenerationPreview | null> {
  try {
    const thumbKey = previewThumbKey(generation.user_id, generation.id);
    const built = await build((thumb) => storage.put(thumbKey, thumb, 'image/webp'));
    return { thumb_key: thumbKey, poster_key: built.posterIsThumb ? thumbKey : null, width: built.width, height: built.height, blurhash: built.blurhash };
  } catch (error) {
    if (isUnreachable(error)) throw error;
    log.warn({ err: error, generationId: generation.id }, 'preview copy failed; the generation succeeds without one');
    return null;
  }
}

/** Contract B, limits: a studio text answer is at most 1000 characters. */
const maxResultTextLength = 1000;

/**
 * The answer of a text task from the provider's result file: UTF-8 text, as `answerText` keeps it.
 * Null when it is not UTF-8 text: the generation fails as `result_rejected`.
 */
export function resultText(body: Buffer): string | null {
  try {
    return answerText(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    return null;
  }
}

/**
 * A text task's answer (from its result file, or given inline by the provider): trimmed, cut to 1000
 * characters (whole code points) when the provider said more. Null when it is empty or holds a NUL:
 * the generation fails as `result_rejected`.
 */
export function answerText(answer: string): string | null {
  const text = answer.trim();
  if (text === '' || text.includes('\u0000')) return null;
  const characters = Array.from(text);
  return characters.length <= maxResultTextLength ? text : characters.slice(0, maxResultTextLength).join('').trimEnd();
}
