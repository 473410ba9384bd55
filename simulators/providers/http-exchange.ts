import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type http from 'node:http';

/** What every front of the provider simulator reads and writes the same way. */

export const MAX_BODY_BYTES = 1024 * 1024;

/** The body's bytes, or null when it is larger than `maxBytes`. */
export async function readBytes(req: http.IncomingMessage, maxBytes: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The body as JSON, or undefined when it is too large or not JSON (answered as an invalid request). */
export async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const body = await readBytes(req, MAX_BODY_BYTES);
  if (body === null) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

/** Streams a file of the simulator's disk; false when it is gone. */
export async function sendFile(res: http.ServerResponse, filePath: string, contentType: string): Promise<boolean> {
  const size = await stat(filePath).then((stats) => stats.size, () => null);
  if (size === null) return false;
  res.writeHead(200, { 'content-type': contentType, 'content-length': size });
  createReadStream(filePath).on('error', () => res.destroy()).pipe(res);
  return true;
}

export function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** The API key of an `Authorization: <scheme> <key>` header, or null. */
export function keyOf(req: http.IncomingMessage, scheme: 'Bearer' | 'Key'): string | null {
  const pattern = scheme === 'Bearer' ? /^(?:Bearer|Token)\s+(\S+)$/i : /^Key\s+(\S+)$/i;
  return pattern.exec(req.headers.authorization ?? '')?.[1] ?? null;
}

/** What a simulated model reads of a hosted API's `input` object: every link in it, in order, as its photos, and `input.prompt`. */
export function modelInputOf(input: object): { photoUrls: string[]; prompt: string } {
  const { prompt } = input as { prompt?: unknown };
  return { photoUrls: linksOf(input), prompt: typeof prompt === 'string' ? prompt : '' };
}

function linksOf(input: unknown): string[] {
  if (typeof input === 'string') return /^https?:\/\//.test(input) ? [input] : [];
  if (Array.isArray(input)) return input.flatMap(linksOf);
  if (input && typeof input === 'object') return Object.values(input).flatMap(linksOf);
  return [];
}
