declare module 's3rver' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  interface S3rverOptions {
    directory: string;
    silent?: boolean;
    /** Off: a Host header never names a bucket (the gateway sends every request path-style). */
    vhostBuckets?: boolean;
    configureBuckets?: { name: string; configs: Buffer[] }[];
  }
  /** A Koa application: served by a server of its own (`embedded-s3.ts`), not by `run()`. */
  export default class S3rver {
    constructor(options: S3rverOptions);
    configureBuckets(): Promise<void>;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    /** Koa's middleware, in the order they run. */
    middleware: ((context: unknown, next: () => Promise<void>) => Promise<void>)[];
  }
}
