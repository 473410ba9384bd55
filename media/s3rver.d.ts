declare module 's3rver' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  import type { Readable } from 'node:stream';
  interface S3rverOptions {
    directory: string;
    silent?: boolean;
    /** Off: a Host header never names a bucket (the gateway sends every request path-style). */
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs: Buffer[] }[];
  }
  /**
   * s3rver's file-system store (`FilesystemStore`): the calls whose answers `embedded-s3.ts` keeps,
   * and those that change what they read. Its own calls go through these same properties.
   */
  export interface FilesystemStore {
    /** The file of `resource` (`'object'`: the object's bytes) of an object. */
    getResourcePath(bucket: string, key: string, resource: string): string;
    getBucket(bucket: string): Promise<unknown>;
    /** `key` undefined: a subresource (CORS, website) of the bucket itself. */
    getSubresource(bucket: string, key: string | undefined, type: string): Promise<unknown>;
    /** Rejects (ENOENT) for an absent object. */
    getMetadata(bucket: string, key: string): Promise<Record<string, unknown>>;
    /** Writes the object's MD5 (when given) and its metadata, each a file of its own. */
    putMetadata(bucket: string, key: string, metadata: Record<string, unknown>, md5?: string): Promise<unknown>;
    /** Writes the object's bytes, then its MD5 and metadata (`putMetadata`); answers its size and MD5 (hex). */
    putObject(object: { bucket: string; key: string; content: Buffer | Readable; metadata: Record<string, unknown> }): Promise<{ size: number; md5: string }>;
    copyObject(sourceBucket: string, sourceKey: string, bucket: string, key: string, ...rest: unknown[]): Promise<unknown>;
    deleteObject(bucket: string, key: string): Promise<unknown>;
    putObjectMultipart(bucket: string, ...rest: unknown[]): Promise<unknown>;
    putBucket(bucket: string): Promise<unknown>;
    deleteBucket(bucket: string): Promise<unknown>;
    putSubresource(bucket: string, ...rest: unknown[]): Promise<unknown>;
    deleteSubresource(bucket: string, ...rest: unknown[]): Promise<unknown>;
  }
  /** A Koa application: its handler is served by the gateway (`embedded-s3.ts`), not by `run()`. */
  export default class S3rver {
    /** The store every request reads and writes through. */
    store: FilesystemStore;
    constructor(options: S3rverOptions);
    configureBuckets(): Promise<void>;
    callback(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
    /** Koa's middleware, in the order they run. */
    middleware: ((context: unknown, next: () => Promise<void>) => Promise<void>)[];
  }
}
