import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { buildEffectPreview, storePreviewFiles } from '../../media/effect-preview';
import { imageFileType, videoFileType } from '../../media/file-types';
import type { Storage } from '../../media/storage';
import type { FocusPoint, PreviewColumns } from '../../db/catalog/model';

/** An operator's poster (and optional clip) for an effect, with the points to keep in frame. */
export interface PreviewMedia {
  poster: Buffer;
  clip?: Buffer | null;
  focus?: FocusPoint | null;
  videoFocus?: FocusPoint | null;
}

/**
 * Preview URLs are immutable (contract: a new poster gets new addresses), so clients and CDNs may
 * cache them forever: every file of one poster-and-clip pair lives under a folder named by the hash
 * of their bytes. The same media give the same keys; new media never overwrite old objects.
 */
export function previewFolder(effectId: string, media: PreviewMedia): string {
  const hash = createHash('sha256').update(media.poster);
  if (media.clip) hash.update(createHash('sha256').update(media.clip).digest());
  return `effects/${effectId}/${hash.digest('hex').slice(0, 24)}`;
}

/** Throws a media error (unreadable or unsupported file) before anything is stored. */
export async function checkPreviewMedia(media: PreviewMedia): Promise<void> {
  await imageFileType(media.poster);
  if (media.clip) videoFileType(media.clip);
}

/** Where the poster itself is kept, in its own format (only formats every client shows). */
async function posterKeyOf(effectId: string, media: PreviewMedia): Promise<{ key: string; contentType: string }> {
  const { extension, contentType } = await imageFileType(media.poster);
  return { key: `${previewFolder(effectId, media)}/poster.${extension}`, contentType };
}

/** Stores the poster as given; it is the effect's `preview_url` from then on. Quick: no copies. */
async function storePoster(storage: Storage, effectId: string, media: PreviewMedia): Promise<string> {
  const { key, contentType } = await posterKeyOf(effectId, media);
  await storage.put(key, media.poster, contentType);
  return key;
}

/**
 * Makes and stores every copy of the poster and clip (media's `buildEffectPreview`): WebP thumb,
 * card and full; with a clip, the MP4 video, the separate MP4 animation loop and the animated WebP
 * that is `preview_animation_url`. Slow: seconds for a clip.
 */
async function storePreviewCopies(
  storage: Storage,
  effectId: string,
  media: PreviewMedia,
): Promise<Pick<PreviewColumns, 'preview' | 'preview_video_key' | 'preview_animation_key'>> {
  const folder = previewFolder(effectId, media);
  const built = await buildEffectPreview({ poster: media.poster, clip: media.clip ?? undefined });
  const keys = await storePreviewFiles(storage, folder, built);
  return {
    preview: {
      thumb: keys.get('thumb')!,
      card: keys.get('card')!,
      full: keys.get('full')!,
      animation: keys.get('animation') ?? null,
      video: keys.get('video') ?? null,
      width: built.width,
      height: built.height,
      blurhash: built.blurhash,
    },
    preview_video_key: keys.get('video') ?? null,
    preview_animation_key: keys.get('animation_webp') ?? null,
  };
}

/** Both steps, for the importer: every preview column of the effect, ready to write. */
export async function storePreview(storage: Storage, effectId: string, media: PreviewMedia): Promise<PreviewColumns> {
  const posterKey = await storePoster(storage, effectId, media);
  const copies = await storePreviewCopies(storage, effectId, media);
  return { poster_key: posterKey, ...copies, focus: media.focus ?? null, video_focus: media.clip ? media.videoFocus ?? null : null };
}

/**
 * Gives an existing effect a new poster (and clip): the poster shows at once as `preview_url` with
 * `preview` null (`setEffectPoster`), and the copies follow when they are made
 * (`completeEffectPreview`, here in a row; a worker could make them later). Returns false when the
 * copies were not shown because another poster replaced this one meanwhile, or the effect is gone.
 */
export async function replaceEffectPreview(db: Knex, storage: Storage, effectId: string, media: PreviewMedia): Promise<boolean> {
  await setEffectPoster(db, storage, effectId, media);
  return completeEffectPreview(db, storage, effectId, media);
}

/** The first step: stores the poster and shows it, with no copies (`preview` null) until they are ready. */
export async function setEffectPoster(db: Knex, storage: Storage, effectId: string, media: PreviewMedia): Promise<void> {
  const posterKey = await storePoster(storage, effectId, media);
  await db('effects').where({ id: effectId }).update({
    poster_key: posterKey,
    preview: null,
    preview_video_key: null,
    preview_animation_key: null,
    focus: media.focus ? JSON.stringify(media.focus) : null,
    video_focus: media.clip && media.videoFocus ? JSON.stringify(media.videoFocus) : null,
    updated_at: db.fn.now(),
  });
}

/**
 * The second step: makes and stores the copies, and shows them only if the effect still has this
 * poster (the poster key in the `where`), so copies of a replaced poster never appear under a newer one.
 */
export async function completeEffectPreview(db: Knex, storage: Storage, effectId: string, media: PreviewMedia): Promise<boolean> {
  const copies = await storePreviewCopies(storage, effectId, media);
  const { key } = await posterKeyOf(effectId, media);
  const updated = await db('effects')
    .where({ id: effectId, poster_key: key })
    .update({ ...copies, preview: JSON.stringify(copies.preview), updated_at: db.fn.now() });
  return updated > 0;
}

/** Stores an author's avatar under an immutable key (a new image gets a new address); returns the key. */
export async function storeAuthorAvatar(storage: Storage, authorId: string, image: Buffer): Promise<string> {
  const { extension, contentType } = await imageFileType(image);
  const key = `authors/${authorId}/${createHash('sha256').update(image).digest('hex').slice(0, 24)}.${extension}`;
  await storage.put(key, image, contentType);
  return key;
}
