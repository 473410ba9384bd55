import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import http, { type Server } from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import S3rver from 's3rver';
import { listenerUrl } from '../common/addresses';
import { listen } from '../common/listen';
import { publicReadPrefixes } from './object-keys';
import type { StorageSettings } from './storage';
import { storeGateway } from './store-gateway/gateway';

/** How long the gateway keeps an idle connection to the store. */
const idleStoreConnectionMs = 30_000;

export interface EmbeddedS3 {
  settings: StorageSettings;
  stop(): Promise<void>;
}

function listeningOnSocket(server: Server, socket: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(socket, () => resolve());
  });
}

function closed(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/**
 * An S3-compatible server on local disk, for the embedded default and tests: s3rver, which checks
 * no signature, listens only on a Unix socket in a private directory (0700), and clients and the
 * service reach it through the gateway (`store-gateway/gateway.ts`), which checks every request as
 * S3 would, on `host`:`port`. A module of its own, loaded only where it runs: s3rver and its
 * dependencies are about a tenth of a role process's start.
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
  const socketDirectory = mkdtempSync(path.join(os.tmpdir(), 'effects-s3-'));
  const socket = path.join(socketDirectory, 'store.sock');
  const storeServer = http.createServer(store.callback());
  // Only the gateway connects, through its agent, which closes its idle connections itself.
  storeServer.keepAliveTimeout = 0;
  await listeningOnSocket(storeServer, socket);
  const storeAgent = new http.Agent({ keepAlive: true, timeout: idleStoreConnectionMs });
  // Each connection is to the store's socket whatever a request names: an HTTP interceptor (the
  // tests' nock) passes a request on without its `socketPath` when it has an agent.
  storeAgent.createConnection = () => net.createConnection(socket);

  const credentials = { accessKey: 'S3RVER', secretKey: options.secretKey, region: 'us-east-1' };
  const gateway = http.createServer({ requestTimeout: options.requestTimeoutMs }, storeGateway({ bucket: options.bucket, credentials, publicReadPrefixes, storeAgent }));
  let port: number;
  try {
    port = await listen(gateway, options.port, options.host, 'EMBEDDED_S3_PORT');
  } catch (error) {
    storeAgent.destroy();
    await closed(storeServer);
    rmSync(socketDirectory, { recursive: true, force: true });
    throw error;
  }
  const endpoint = listenerUrl(options.host, port);
  return {
    settings: { endpoint, ...credentials, bucket: options.bucket, publicUrl: options.publicUrl ?? endpoint },
    stop: async () => {
      await closed(gateway);
      storeAgent.destroy();
      await closed(storeServer);
      rmSync(socketDirectory, { recursive: true, force: true });
    },
  };
}
