import { randomUUID } from 'node:crypto';
import { quantity } from '../../common/plural';
import { UnreadableImageError } from '../../media/errors';
import { probeImage, reencodeJpegWithoutMetadata } from '../../media/images';
import { avatarKey, avatarPrefix } from '../../media/object-keys';
import type { Services } from '../../services';
import { errors, invalidField } from '../http/errors';

/**
 * The avatar flow: a presigned POST ticket for `avatars/<user_id>/<uuid>.<ext>`, then binding the
 * uploaded object. The store enforces the ticket's policy (key, type, size); binding checks them again,
 * for a store that would not, and re-encodes the file to JPEG without EXIF/GPS under the same key.
 */
export const avatarContentTypes = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/webp': 'webp' } as const;
export type AvatarContentType = keyof typeof avatarContentTypes;

const ticketLifetimeS = 600;
const acceptedFormats = new Set(['jpeg', 'png', 'webp']);

export interface AvatarTicket {
  url: string;
  fields: Record<string, string>;
  object_key: string;
  expires_in: number;
}

export async function avatarUploadTicket(services: Services, userId: string, contentType: AvatarContentType): Promise<AvatarTicket> {
  const key = avatarKey(userId, randomUUID(), avatarContentTypes[contentType]);
  const ticket = await services.storage.presignedPost(key, { contentType, maxBytes: services.config.avatarMaxBytes, expiresInSeconds: ticketLifetimeS });
  return { url: ticket.url, fields: ticket.fields, object_key: key, expires_in: ticketLifetimeS };
}

/** Only one plain file name directly under the caller's own folder; `..` and sub-folders are refused too. */
function isOwnAvatarKey(userId: string, key: string): boolean {
  const prefix = avatarPrefix(userId);
  const name = key.slice(prefix.length);
  return key.startsWith(prefix) && /^[A-Za-z0-9._-]+$/.test(name) && !name.includes('..');
}

const objectKeyField = ['body', 'object_key'];

export async function bindAvatar(services: Services, userId: string, key: string): Promise<void> {
  const { storage, config } = services;
  if (!isOwnAvatarKey(userId, key)) throw errors.forbidden('The avatar must be uploaded under your own avatars/ folder.');
  const stored = await storage.stat(key);
  if (!stored) throw invalidField(objectKeyField, 'no uploaded file under this key', 'object_missing');
  // Behind the store's policy, a second check: only the object put through this key's own ticket counts.
  if (!stored.viaItsTicket) throw invalidField(objectKeyField, 'the file under this key was not put there through its upload ticket', 'object_not_via_ticket');
  if (stored.size > config.avatarMaxBytes) throw invalidField(objectKeyField, `the file is larger than ${quantity(config.avatarMaxBytes, 'byte')}`, 'file_too_large');
  const original = await storage.get(key);
  let jpeg: Buffer;
  try {
    if (!acceptedFormats.has(String((await probeImage(original)).format))) throw new UnreadableImageError();
    jpeg = await reencodeJpegWithoutMetadata(original);
  } catch (error) {
    if (error instanceof UnreadableImageError) throw invalidField(objectKeyField, 'the file is not a JPEG, PNG or WebP image', 'not_an_image');
    throw error;
  }
  await storage.put(key, jpeg, 'image/jpeg');
  const previous = await replaceAvatarKey(services, userId, key);
  if (previous && previous !== key) await storage.remove(previous);
}

/** Sets the avatar key and answers the one it replaced, in one statement. */
async function replaceAvatarKey(services: Services, userId: string, key: string | null): Promise<string | null> {
  const { rows } = await services.db.raw<{ rows: { previous: string | null }[] }>(
    `update users set avatar_key = ? from (select avatar_key as previous from users where id = ? for update) old
     where id = ? returning old.previous`,
    [key, userId, userId],
  );
  return rows[0]?.previous ?? null;
}

export async function removeAvatar(services: Services, userId: string): Promise<void> {
  const previous = await replaceAvatarKey(services, userId, null);
  if (previous) await services.storage.remove(previous);
}
