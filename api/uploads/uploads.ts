import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Storage, StoredObject } from '../../media/storage';
import { uploadKey } from '../../media/object-keys';

/** Decisions section 4: photo uploads go straight to storage by a presigned multipart POST. */
export const uploadContentTypes: Record<string, string> = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/webp': 'webp' };
/** Contract B, limits: an upload file is at most 15 MB. */
export const maxUploadBytes = 15 * 1024 * 1024;
const uploadTicketTtlS = 600;

export interface UploadRow {
  id: string;
  user_id: string;
  object_key: string;
  content_type: string;
  created_at: Date;
}

export interface UploadTicketView {
  id: string;
  url: string;
  fields: Record<string, string>;
  object_key: string;
  expires_in: number;
}

export interface UploadView {
  id: string;
  status: 'pending' | 'completed';
  content_type: string;
  size: number | null;
  created_at: string;
}

/** A new upload: the row first, so the key is the caller's before anything can be put under it. */
export async function createUpload(db: Knex, storage: Storage, userId: string, contentType: string): Promise<UploadTicketView> {
  const id = randomUUID();
  const objectKey = uploadKey(userId, id, uploadContentTypes[contentType]);
  await db('uploads').insert({ id, user_id: userId, object_key: objectKey, content_type: contentType });
  const ticket = await storage.presignedPost(objectKey, { contentType, maxBytes: maxUploadBytes, expiresInSeconds: uploadTicketTtlS });
  return { id, url: ticket.url, fields: ticket.fields, object_key: objectKey, expires_in: uploadTicketTtlS };
}

/** The caller's uploads among `ids` (others' and absent ones are simply not there). */
export async function findOwnUploads(db: Knex, userId: string, ids: string[]): Promise<UploadRow[]> {
  if (!ids.length) return [];
  return db('uploads').where({ user_id: userId }).whereIn('id', ids).select('id', 'user_id', 'object_key', 'content_type', 'created_at');
}

/**
 * Whether the object under an upload's key is the one its ticket named: put through that ticket,
 * of the type it named, within 15 MB. The store enforces the ticket's policy; this is checked again at
 * use, so a store that would not (a swapped key, type or size) cannot hand the service another file.
 */
export type UploadCheck = 'completed' | 'pending' | 'not_via_its_ticket' | 'wrong_type' | 'too_large';

export function checkUpload(row: UploadRow, stored: StoredObject | null): UploadCheck {
  if (!stored) return 'pending';
  if (!stored.viaItsTicket) return 'not_via_its_ticket';
  if (stored.contentType !== row.content_type) return 'wrong_type';
  if (stored.size > maxUploadBytes) return 'too_large';
  return 'completed';
}

/** Completed means the object its ticket named is in storage; the size is the stored object's. */
export function uploadView(row: UploadRow, stored: StoredObject | null): UploadView {
  const completed = checkUpload(row, stored) === 'completed';
  return {
    id: row.id,
    status: completed ? 'completed' : 'pending',
    content_type: row.content_type,
    size: completed ? stored!.size : null,
    created_at: row.created_at.toISOString(),
  };
}
