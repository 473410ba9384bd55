/**
 * Where each kind of user file lives in object storage, in one place: every key of a user's file
 * starts with one of `userPrefixes(userId)`, so deleting an account erases them all.
 */
const folders = { avatars: 'avatars', uploads: 'uploads', results: 'results', previews: 'previews' } as const;

export function userPrefixes(userId: string): string[] {
  return Object.values(folders).map((folder) => `${folder}/${userId}/`);
}

export function avatarPrefix(userId: string): string {
  return `${folders.avatars}/${userId}/`;
}

export function avatarKey(userId: string, fileId: string, extension: string): string {
  return `${avatarPrefix(userId)}${fileId}.${extension}`;
}

export function uploadKey(userId: string, uploadId: string, extension: string): string {
  return `${folders.uploads}/${userId}/${uploadId}.${extension}`;
}

export function resultKey(userId: string, generationId: string, extension: string): string {
  return `${folders.results}/${userId}/${generationId}.${extension}`;
}

export function previewThumbKey(userId: string, generationId: string): string {
  return `${folders.previews}/${userId}/${generationId}.webp`;
}

/**
 * The folders anyone may read without a signature, by the plain address of `Storage.publicUrl`:
 * avatars and the catalog's images (catalog effects', authors', user effects' previews). The
 * embedded store's gateway serves exactly these unsigned; a real store needs a bucket policy that
 * makes them public, and nothing else.
 */
export const publicReadPrefixes = [`${folders.avatars}/`, 'authors/', 'effects/', 'user-effects/'] as const;
