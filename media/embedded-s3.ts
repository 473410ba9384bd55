import { createHash } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import http, { type Server } from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import S3rver, { type FilesystemStore } from 's3rver';
import { listenerUrl } from '../common/addresses';
import { listen } from '../common/listen';
import { publicReadPrefixes } from './object-keys';
import type { StorageSettings } from './storage';
import { storeGateway } from './store-gateway/gateway';

export interface EmbeddedS3 {
  settings: StorageSettings;
  stop(): Promise<void>;
}

function closed(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/**
 * An S3-compatible server on local disk, for the embedded default and tests: s3rver, which checks
 * no signature and listens nowhere: clients and the service reach it through the gateway
 * (`store-gateway/gateway.ts`), which checks every request as S3 would, on `host`:`port`, and
 * hands it to s3rver's handler in the same process. A module of its own, loaded only where it
 * runs: s3rver and its dependencies are about a tenth of a role process's start.
 */
export async function startEmbeddedS3(options: {
  directory: string;
  host: string;
  port: number;
  bucket: string;
  secretKey: string;
  /** The origin links are made for; null: the gateway's own address. */
  publicUrl: string | null;
  requestTimeoutMs: number;
}): Promise<EmbeddedS3> {
  mkdirSync(options.directory, { recursive: true });
  const store = new S3rver({ directory: path.resolve(options.directory), silent: true, vhostBuckets: false, configureBuckets: [{ name: options.bucket, configs: [] }] });
  await store.configureBuckets();
  // s3rver logs each request through koa-logger even when silent (its colouring alone costs more
  // than the gateway's checks); its first middleware is that logger.
  if (store.middleware[0]?.name === 'logger') store.middleware.shift();
  writeBytesBeforeAnswering(store.store);
  writeMetadataTogether(store.store);
  keepDescriptions(store.store);
  const credentials = { accessKey: 'S3RVER', secretKey: options.secretKey, region: 'us-east-1' };
  const gateway = http.createServer({ requestTimeout: options.requestTimeoutMs }, storeGateway({ bucket: options.bucket, credentials, publicReadPrefixes, store: store.callback() }));
  const port = await listen(gateway, options.port, options.host, 'EMBEDDED_S3_PORT');
  const endpoint = listenerUrl(options.host, port);
  return {
    settings: { endpoint, ...credentials, bucket: options.bucket, publicUrl: options.publicUrl ?? endpoint },
    stop: () => closed(gateway),
  };
}

/**
 * s3rver's own `putObject` resolves once the bytes have passed through its MD5, before its file
 * stream has written them (and at once for bytes given whole): the store answered a PUT or an upload
 * ticket's POST while the object's file was still being written, and a read right after it (a
 * generation's photo, just uploaded) could see part of the object. This one resolves once the file
 * holds every byte. Installed first: the other adaptations wrap it.
 */
function writeBytesBeforeAnswering(store: FilesystemStore): void {
  store.putObject = async (object) => {
    const objectPath = store.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(path.dirname(objectPath), { recursive: true });
    const md5 = createHash('md5');
    let size = 0;
    const content = Buffer.isBuffer(object.content) ? Readable.from([object.content]) : object.content;
    await pipeline(content, async function* (chunks: AsyncIterable<Buffer>) {
      for await (const chunk of chunks) {
        md5.update(chunk);
        size += chunk.length;
        yield chunk;
      }
    }, createWriteStream(objectPath));
    const digest = md5.digest('hex');
    await store.putMetadata(object.bucket, object.key, object.metadata, digest);
    return { size, md5: digest };
  };
}

/**
 * s3rver writes an object's two small files after its bytes one after the other: its MD5, then its
 * metadata. A new file costs a round trip to libuv's threads and a file creation on disk, a good
 * part of a small object's PUT; the MD5 is written beside the metadata instead.
 */
function writeMetadataTogether(store: FilesystemStore): void {
  const putMetadata = store.putMetadata.bind(store);
  store.putMetadata = async (bucket, key, metadata, md5) => {
    await Promise.all([md5 ? writeFile(store.getResourcePath(bucket, key, 'object.md5'), md5) : undefined, putMetadata(bucket, key, metadata)]);
  };
}

/** Descriptions kept, at most; then forgotten all at once. */
const maxKeptDescriptions = 10_000;

/**
 * How long an object must have stayed unchanged before its description is kept: its writer (this
 * store, or another one on the same directory) writes its metadata files after its bytes.
 */
const settledObjectMs = 1000;

/**
 * s3rver reads, for every request, the bucket's directory and its CORS and website configuration
 * files, then the object's size, metadata and MD5 (files of their own): a dozen round trips to
 * libuv's threads before the object's first byte, most of a request's time. Their answers are kept:
 * - the bucket's change only through the store's own calls, which forget them as they begin and end;
 * - an object's description is checked on each read against its file's size and modification
 *   time (one round trip), is kept only once the object has stayed unchanged for a second, and is
 *   forgotten by this store's writes of the object as they begin and end;
 * - a read during which any write of this store began or ran keeps nothing.
 */
function keepDescriptions(store: FilesystemStore): void {
  const bucketParts = new Map<string, Promise<unknown>>();
  const objects = new Map<string, { size: number; mtimeMs: number; metadata: Record<string, unknown> }>();
  const writes = { begun: 0, underWay: 0 };
  /** Asks, once a read is done, whether no write ran during it: none under way as it began, none begun since. */
  const quietFromNow = (): (() => boolean) => {
    if (writes.underWay > 0) return () => false;
    const begun = writes.begun;
    return () => writes.underWay === 0 && writes.begun === begun;
  };

  const rememberBucketPart = (entry: string, read: () => Promise<unknown>): Promise<unknown> => {
    const hit = bucketParts.get(entry);
    if (hit) return hit;
    const quiet = quietFromNow();
    const answer = read();
    answer.then(() => {
      if (quiet()) bucketParts.set(entry, answer);
    }, () => undefined);
    return answer;
  };
  const getBucket = store.getBucket.bind(store);
  const getSubresource = store.getSubresource.bind(store);
  store.getBucket = (bucket) => rememberBucketPart(`bucket\u0000${bucket}`, () => getBucket(bucket));
  store.getSubresource = (bucket, key, type) => (key === undefined
    ? rememberBucketPart(`${type}\u0000${bucket}`, () => getSubresource(bucket, key, type))
    : getSubresource(bucket, key, type));

  const getMetadata = store.getMetadata.bind(store);
  store.getMetadata = async (bucket, key) => {
    const entry = `${bucket}/${key}`;
    const quiet = quietFromNow();
    // Rejects for an absent object, as s3rver's own read does.
    const file = await stat(store.getResourcePath(bucket, key, 'object'));
    const hit = objects.get(entry);
    if (hit && hit.size === file.size && hit.mtimeMs === file.mtimeMs) return { ...hit.metadata };
    const metadata = await getMetadata(bucket, key);
    if (quiet() && Date.now() - file.mtimeMs > settledObjectMs) {
      if (objects.size >= maxKeptDescriptions) objects.clear();
      objects.set(entry, { size: file.size, mtimeMs: file.mtimeMs, metadata: { ...metadata } });
    }
    return metadata;
  };

  const writing = <Name extends keyof FilesystemStore>(name: Name, forget: (...args: Parameters<FilesystemStore[Name]>) => void) => {
    const write = (store[name] as (...args: unknown[]) => Promise<unknown>).bind(store);
    (store[name] as (...args: unknown[]) => Promise<unknown>) = async (...args: unknown[]) => {
      const forgetIt = () => forget(...(args as Parameters<FilesystemStore[Name]>));
      writes.begun += 1;
      writes.underWay += 1;
      forgetIt();
      try {
        return await write(...args);
      } finally {
        writes.underWay -= 1;
        forgetIt();
      }
    };
  };
  const forgetObject = (bucket: string, key: string) => objects.delete(`${bucket}/${key}`);
  const forgetEverything = () => {
    bucketParts.clear();
    objects.clear();
  };
  writing('putMetadata', forgetObject);
  writing('putObject', (object) => forgetObject(object.bucket, object.key));
  writing('copyObject', (_sourceBucket, _sourceKey, bucket, key) => forgetObject(bucket, key));
  writing('deleteObject', forgetObject);
  for (const name of ['putObjectMultipart', 'putBucket', 'deleteBucket', 'putSubresource', 'deleteSubresource'] as const) writing(name, forgetEverything);
}
