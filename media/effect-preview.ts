import { blurhashOf } from './blurhash';
import { FILE_TYPES } from './file-types';
import { probeImage, webpCopy } from './images';
import type { Storage } from './storage';
import { makeAnimatedWebp, makeAnimationLoop, makePreviewClip } from './video';

export type EffectPreviewRole = 'thumb' | 'card' | 'full' | 'video' | 'animation' | 'animation_webp';

export interface EffectPreviewFile {
  role: EffectPreviewRole;
  extension: string;
  contentType: string;
  body: Buffer;
}

export interface EffectPreview {
  files: EffectPreviewFile[];
  /** Size of the original poster. */
  width: number;
  height: number;
  blurhash: string;
}

const POSTER_COPIES = [
  { role: 'thumb', shortSide: 480 },
  { role: 'card', shortSide: 720 },
  { role: 'full', shortSide: 1080 },
] as const;

/** Every file of an effect's `preview`; the caller stores them and builds the URLs. */
export async function buildEffectPreview({ poster, clip }: { poster: Buffer; clip?: Buffer }): Promise<EffectPreview> {
  const { width, height } = await probeImage(poster);
  const posterFiles = await Promise.all(
    POSTER_COPIES.map(async ({ role, shortSide }) => ({ role, ...FILE_TYPES.webp, body: await webpCopy(poster, shortSide) })),
  );
  const files: EffectPreviewFile[] = [...posterFiles];
  if (clip) {
    // One after another: each ffmpeg run already uses every core.
    files.push({ role: 'video', ...FILE_TYPES.mp4, body: await makePreviewClip(clip) });
    files.push({ role: 'animation', ...FILE_TYPES.mp4, body: await makeAnimationLoop(clip) });
    files.push({ role: 'animation_webp', ...FILE_TYPES.webp, body: await makeAnimatedWebp(clip) });
  }
  // The thumb looks the same as the poster at blurhash's resolution and decodes far faster.
  return { files, width, height, blurhash: await blurhashOf(posterFiles[0].body) };
}

/** The file name of each copy inside its preview folder. */
const previewFileNames: Record<EffectPreviewRole, string> = {
  thumb: 'thumb.webp',
  card: 'card.webp',
  full: 'full.webp',
  video: 'video.mp4',
  animation: 'animation.mp4',
  animation_webp: 'animation.webp',
};

/**
 * Stores every file of a built preview under `folder` (named by the hash of its media, so its
 * addresses never change; the catalog's `previewFolder`); answers the key of each role.
 */
export async function storePreviewFiles(storage: Storage, folder: string, built: EffectPreview): Promise<Map<EffectPreviewRole, string>> {
  const keys = new Map<EffectPreviewRole, string>();
  await Promise.all(built.files.map(async (file) => {
    const key = `${folder}/${previewFileNames[file.role]}`;
    await storage.put(key, file.body, file.contentType);
    keys.set(file.role, key);
  }));
  return keys;
}
