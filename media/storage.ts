import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import * as Minio from 'minio';

/** What the service needs from object storage; the same code runs against MinIO, S3 or the embedded server. */
export interface StoredObject {
  size: number;
  contentType: string | null;
  /** Put through the upload ticket issued for exactly this key (`presignedPost`). */
  viaItsTicket: boolean;
}

export interface UploadTicket {
  url: string;
  fields: Record<string, string>;
}

export interface StorageSettings {
  /** Where the service itself reaches the store. */
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
  /**
   * The origin clients reach the store at: presigned links and public URLs are made for it (a
   * signature covers the host it was made for, so links are signed for this one, never rewritten).
   */
  publicUrl: string;
}

/** The user metadata a ticket's form carries (`x-amz-meta-ticket`), which the stored object keeps. */
const ticketMetadata = 'ticket';

function minioClient(settings: StorageSettings, address: string): Minio.Client {
  const url = new URL(address);
  return new Minio.Client({
    // The client wants an IPv6 host without its brackets.
    endPoint: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : undefined,
    useSSL: url.protocol === 'https:',
    accessKey: settings.accessKey,
    secretKey: settings.secretKey,
    region: settings.region,
    pathStyle: true,
  });
}

export class Storage {
  private readonly client: Minio.Client;
  /** Only signs links for the public origin (the region is set, so signing asks the store nothing). */
  private readonly linkSigner: Minio.Client;

  /** `ticketSecret` signs each upload ticket's stamp, so no one can make the stamp of another key. */
  constructor(readonly settings: StorageSettings, private readonly ticketSecret: string) {
    this.client = minioClient(settings, settings.endpoint);
    this.linkSigner = settings.publicUrl === settings.endpoint ? this.client : minioClient(settings, settings.publicUrl);
  }

  get bucket(): string {
    return this.settings.bucket;
  }

  async ensureBucket(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket))) {
      await this.client.makeBucket(this.bucket, this.settings.region).catch((error: { code?: string }) => {
        if (error.code !== 'BucketAlreadyOwnedByYou' && error.code !== 'BucketAlreadyExists') throw error;
      });
    }
  }

  async put(key: string, body: Buffer, contentType: string): Promise<void> {
    await this.client.putObject(this.bucket, key, body, body.length, { 'Content-Type': contentType });
  }

  async get(key: string): Promise<Buffer> {
    return collected(await this.client.getObject(this.bucket, key));
  }

  /** The first `length` bytes of an object (all of it when it is shorter): a ranged GET. */
  async getHead(key: string, length: number): Promise<Buffer> {
    return collected(await this.client.getPartialObject(this.bucket, key, 0, length));
  }

  /**
   * What `stat` tells of an object and its first `length` bytes (all of it when it is shorter), from
   * one ranged GET: a look and a read in one round trip. Null when it does not exist.
   */
  async readHead(key: string, length: number): Promise<{ object: StoredObject; head: Buffer } | null> {
    let answer: IncomingMessage;
    try {
      // The client answers the store's response itself, typed as a plain stream.
      answer = await this.client.getPartialObject(this.bucket, key, 0, length) as IncomingMessage;
    } catch (error) {
      if (isMissingObject(error)) return null;
      // An empty object has no first byte to range over.
      if ((error as { code?: string }).code === 'InvalidRange') {
        const object = await this.stat(key);
        return object && { object, head: Buffer.alloc(0) };
      }
      throw error;
    }
    const head = await collected(answer);
    const { headers } = answer;
    const total = /\/(\d+)$/.exec(headers['content-range'] ?? '')?.[1] ?? headers['content-length'];
    return { object: this.storedObject(key, Number(total), headers['content-type'], headers[`x-amz-meta-${ticketMetadata}`]), head };
  }

  /** Size and type of an object, or null when it does not exist. */
  async stat(key: string): Promise<StoredObject | null> {
    try {
      const stat = await this.client.statObject(this.bucket, key);
      return this.storedObject(key, stat.size, stat.metaData?.['content-type'], stat.metaData?.[ticketMetadata]);
    } catch (error) {
      if (isMissingObject(error)) return null;
      throw error;
    }
  }

  /** An object as the store described it: `ticket`, the stamp its metadata keeps (`presignedPost`). */
  private storedObject(key: string, size: number, contentType: string | undefined, ticket: string | string[] | undefined): StoredObject {
    return { size, contentType: contentType ?? null, viaItsTicket: ticket === this.ticketStamp(key) };
  }

  async remove(key: string): Promise<void> {
    await this.client.removeObject(this.bucket, key);
  }

  /** Removes every object whose key starts with `prefix` (a user's folder at account deletion). */
  async removePrefix(prefix: string): Promise<number> {
    const keys: string[] = [];
    for await (const item of this.client.listObjectsV2(this.bucket, prefix, true)) {
      if (item.name) keys.push(item.name);
    }
    for (let start = 0; start < keys.length; start += 1000) {
      await this.client.removeObjects(this.bucket, keys.slice(start, start + 1000));
    }
    return keys.length;
  }

  presignedGet(key: string, expiresInSeconds: number): Promise<string> {
    return this.linkSigner.presignedGetObject(this.bucket, key, expiresInSeconds);
  }

  /** A plain address for objects under a publicly readable prefix (`publicReadPrefixes`: avatars, catalog previews). */
  publicUrl(key: string): string {
    return `${this.settings.publicUrl}/${this.bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
  }

  /**
   * A browser-style multipart POST ticket for one exact key. The policy names the content type, the
   * size range and a stamp of the key that the object keeps as metadata. The store enforces the
   * policy (S3, MinIO, the embedded store's gateway); the stamp is a second check for a store that
   * would not: an object under a key whose stamp is not the key's own (`viaItsTicket` false) is not used.
   */
  async presignedPost(key: string, options: { contentType: string; maxBytes: number; expiresInSeconds: number }): Promise<UploadTicket> {
    const policy = this.client.newPostPolicy();
    policy.setBucket(this.bucket);
    policy.setKey(key);
    policy.setContentType(options.contentType);
    policy.setUserMetaData({ [ticketMetadata]: this.ticketStamp(key) });
    policy.setContentLengthRange(1, options.maxBytes);
    policy.setExpires(new Date(Date.now() + options.expiresInSeconds * 1000));
    const { postURL, formData } = await this.linkSigner.presignedPostPolicy(policy);
    return { url: postURL, fields: formData };
  }

  private ticketStamp(key: string): string {
    return createHmac('sha256', this.ticketSecret).update(`upload-ticket\n${this.bucket}\n${key}`).digest('base64url');
  }
}

/** The store's answer for a key that holds no object (`NoSuchKey` for a read, `NotFound` for a HEAD). */
export function isMissingObject(error: unknown): boolean {
  return ['NotFound', 'NoSuchKey'].includes((error as { code?: string }).code ?? '');
}

async function collected(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
