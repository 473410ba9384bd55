import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { takeExpired } from './expiry-queue';

/** A file uploaded to the provider ahead of the tasks that read it. */
export interface KeptFile {
  id: string;
  contentType: string;
  expiresAt: number;
}

/**
 * The provider's file store (`POST /v1/files`), as fal's storage or Replicate's files: a task reads
 * a file staged here from the provider's own disk, not over the network. Files are kept `ttlMs`
 * and deleted after, in upload order (which is also their expiry order).
 */
export class StagedFiles {
  private readonly files = new Map<string, KeptFile>();
  private readonly expiring: KeptFile[] = [];

  constructor(
    private readonly dir: string,
    private readonly ttlMs: number,
  ) {}

  /** `id`: the one its upload link named (fal's two-step upload), else a new one. */
  async put(body: Buffer, contentType: string, id: string = randomUUID()): Promise<KeptFile> {
    await mkdir(this.dir, { recursive: true });
    const file = { id, contentType, expiresAt: Date.now() + this.ttlMs };
    await writeFile(this.pathOf(file.id), body);
    this.files.set(file.id, file);
    this.expiring.push(file);
    return file;
  }

  /** The file's record while it is kept, else undefined. */
  get(id: string): KeptFile | undefined {
    const file = this.files.get(id);
    return file && file.expiresAt > Date.now() ? file : undefined;
  }

  /**
   * The bytes of a file still kept; rejects for an unknown or expired one. Read at once: a photo in
   * the page cache takes microseconds, where the thread pool (four opens, reads and closes) queues
   * behind the renders' and the object store's work.
   */
  async read(id: string): Promise<Buffer> {
    if (!this.get(id)) throw new Error('no such file');
    return readFileSync(this.pathOf(id));
  }

  pathOf(id: string): string {
    return path.join(this.dir, id);
  }

  /** Deletes the files past their expiry. */
  sweep(now: number, onError: (error: unknown) => void): void {
    for (const file of takeExpired(this.expiring, now)) {
      this.files.delete(file.id);
      rm(this.pathOf(file.id), { force: true }).catch(onError);
    }
  }
}
