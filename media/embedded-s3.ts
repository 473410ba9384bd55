import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import S3rver from 's3rver';
import type { StorageSettings } from './storage';

export interface EmbeddedS3 {
  settings: StorageSettings;
  stop(): Promise<void>;
}

/**
 * An S3-compatible server on local disk (s3rver), for the embedded default and tests. A module of
 * its own, loaded only where it runs: s3rver and its dependencies are about a tenth of a role
 * process's start.
 */
export async function startEmbeddedS3(options: { directory: string; port: number; bucket: string }): Promise<EmbeddedS3> {
  mkdirSync(options.directory, { recursive: true });
  const server = new S3rver({
    address: '127.0.0.1',
    port: options.port,
    directory: path.resolve(options.directory),
    silent: true,
    configureBuckets: [{ name: options.bucket, configs: [] }],
  });
  const address = (await server.run()) as AddressInfo;
  return {
    settings: {
      endpoint: `http://127.0.0.1:${address.port}`,
      accessKey: 'S3RVER',
      secretKey: 'S3RVER',
      bucket: options.bucket,
      region: 'us-east-1',
    },
    stop: () => server.close(),
  };
}
