import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import Busboy from 'busboy';
import { askStore, requestWithBody, type StoreHandler } from './in-process';
import { checkPostPolicy, type AcceptedForm } from './post-policy';
import { escapeXml, sendRefusal, StoreRefusal } from './s3-error';
import { uriDecode, uriEncode, unsignedPayload, verifyHeaderSignature, verifyQuerySignature, type StoreCredentials } from './signature-v4';

/**
 * What S3 checks, in front of a store that checks nothing (s3rver): every request is verified here
 * and only then passed, without its credentials, to the store's handler in this process, which
 * listens nowhere (`in-process.ts`).
 *
 * - signed in the Authorization header (the service's own `minio` client): the signature, the
 *   clock, and the body against the signed SHA-256 (the body is read whole first: the store writes
 *   into the object's file as it reads, so a body found wrong afterwards would already be stored);
 * - presigned (query): the signature and the expiry;
 * - a browser form (`POST /<bucket>`): the policy, its conditions and `content-length-range`
 *   (`post-policy.ts`); the checked file is then stored as a plain PUT, so the store never parses
 *   a form the gateway might read differently;
 * - unsigned: only GET and HEAD of keys under `publicReadPrefixes` (what a bucket policy makes
 *   public on a real store: avatars, catalog previews).
 *
 * Everything else is refused with S3's error shape and status (`s3-error.ts`).
 */
export interface GatewayOptions {
  bucket: string;
  credentials: StoreCredentials;
  publicReadPrefixes: readonly string[];
  /** The store's own request handler. */
  store: StoreHandler;
}

/** A form's fields before its file: S3 allows 20 KB. */
const formFieldBytes = 20 * 1024;
const formFields = 64;
/** A form's file is held in memory until its size is checked; a policy without a range gets this one. */
const largestFormFileBytes = 100 * 1024 * 1024;
/** Query parameters that authenticate a presigned URL: the store behind the gateway never sees them. */
const authenticationParameters = new Set(['x-amz-algorithm', 'x-amz-credential', 'x-amz-date', 'x-amz-expires', 'x-amz-signedheaders', 'x-amz-signature', 'x-amz-security-token']);
/** The headers of a form whose fields become the stored object's, as S3 stores them. */
const storedFormFields = ['content-type', 'cache-control', 'content-disposition', 'content-encoding', 'expires'];

interface ParsedRequest {
  method: string;
  rawPath: string;
  rawQuery: string;
  query: URLSearchParams;
  /** The decoded path segments after the first `/`: the bucket, then the key's. */
  segments: string[];
  headers: IncomingHttpHeaders;
}

function parse(req: IncomingMessage): ParsedRequest {
  const url = req.url ?? '/';
  const at = url.indexOf('?');
  const rawPath = at < 0 ? url : url.slice(0, at);
  const rawQuery = at < 0 ? '' : url.slice(at + 1);
  const segments = rawPath.split('/').slice(1).map(uriDecode);
  // The store maps keys to files: a `.` or `..` segment, also one behind an encoded slash, could reach another key's file.
  if (!rawPath.startsWith('/') || segments.join('/').split('/').some((segment) => segment === '.' || segment === '..')) {
    throw new StoreRefusal('InvalidURI', "Couldn't parse the specified URI.");
  }
  return { method: req.method ?? 'GET', rawPath, rawQuery, query: new URLSearchParams(rawQuery), segments, headers: req.headers };
}

export function storeGateway(options: GatewayOptions): (req: IncomingMessage, res: ServerResponse) => void {
  /** Passes the request itself on, its body read by the store as it arrives. */
  const forward = async (req: IncomingMessage, res: ServerResponse, url: string) => {
    req.url = url;
    req.headers = passedHeaders(req.headers);
    await options.store(req, res);
  };
  /** Passes the request on with its body, already read here. */
  const forwardRead = async (req: IncomingMessage, res: ServerResponse, body: Buffer) =>
    options.store(requestWithBody(req, { method: req.method!, url: req.url!, headers: passedHeaders(req.headers) }, body), res);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const request = parse(req);
    const { query, headers } = request;
    const now = new Date();
    const byHeader = headers.authorization !== undefined;
    const byQuery = query.has('X-Amz-Algorithm') || query.has('X-Amz-Signature') || query.has('Signature');
    if (byHeader && byQuery) throw new StoreRefusal('InvalidArgument', 'Only one auth mechanism allowed.');

    if (byHeader) {
      const { payloadHash } = verifyHeaderSignature(request, options.credentials, now);
      if (payloadHash === unsignedPayload) return forward(req, res, req.url!);
      const body = await readBody(req);
      if (createHash('sha256').update(body).digest('hex') !== payloadHash) {
        throw new StoreRefusal('XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.");
      }
      return forwardRead(req, res, body);
    }
    if (byQuery) {
      if (query.has('Signature')) throw new StoreRefusal('InvalidRequest', 'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.');
      verifyQuerySignature(request, options.credentials, now);
      return forward(req, res, withoutAuthentication(request));
    }
    const inBucket = request.segments[0] === options.bucket;
    if (request.method === 'POST' && inBucket && request.segments.length === 1 && !request.rawQuery && /^multipart\/form-data/i.test(headers['content-type'] ?? '')) {
      return storeForm(req, res, options);
    }
    const key = request.segments.slice(1).join('/');
    if ((request.method === 'GET' || request.method === 'HEAD') && inBucket && options.publicReadPrefixes.some((prefix) => key.startsWith(prefix))) {
      return forward(req, res, request.rawPath);
    }
    throw new StoreRefusal('AccessDenied', 'Access Denied');
  };

  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      drainRefusedBody(req);
      if (error instanceof StoreRefusal) sendRefusal(res, req.method, error);
      else sendRefusal(res, req.method, new StoreRefusal('InternalError', 'We encountered an internal error. Please try again.'));
    });
  };
}

/** How much of a refused request's unread body is read and dropped, and for how long, before its connection is closed. */
const refusedBodyDrainBytes = 128 * 1024 * 1024;
const refusedBodyDrainMs = 10_000;

/**
 * Reads the rest of a refused request's body (a form's file found too large, a body never
 * forwarded) and drops it, so the connection carries the next request. Closing it with bytes still
 * arriving would make the kernel reset it, and a reset can drop the refusal the client has not read
 * yet: it would see a broken connection instead of the error. A body beyond the limits closes it.
 */
function drainRefusedBody(req: IncomingMessage): void {
  if (req.complete) return;
  let drained = 0;
  const close = () => req.socket.destroy();
  const timer = setTimeout(close, refusedBodyDrainMs).unref();
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > refusedBodyDrainBytes) close();
  });
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/** The request's path and query without the parameters of query authentication. */
function withoutAuthentication(request: ParsedRequest): string {
  const kept = request.rawQuery.split('&').filter((component) => component && !authenticationParameters.has(uriDecode(component.split('=')[0]).toLowerCase()));
  return kept.length ? `${request.rawPath}?${kept.join('&')}` : request.rawPath;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The headers the store sees: without the credentials, and on the host it answers as (s3rver reads it for each write). */
function passedHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const passed = { ...headers, host: 'localhost' };
  delete passed.authorization;
  return passed;
}

/**
 * A form upload: policy and size checked, then stored with a PUT and answered as S3 answers a form:
 * the status it asked for (`success_action_status` 200 or 201, else 204), 201 with a `PostResponse`.
 */
async function storeForm(req: IncomingMessage, res: ServerResponse, options: GatewayOptions): Promise<void> {
  const form = await readForm(req, (fields) => checkPostPolicy(fields, options.bucket, options.credentials, new Date()));
  const headers: IncomingHttpHeaders = {};
  for (const [name, value] of form.fields) {
    if (storedFormFields.includes(name) || name.startsWith('x-amz-meta-')) headers[name] = value;
  }
  const key = form.accepted.key;
  const url = `/${options.bucket}/${key.split('/').map(uriEncode).join('/')}`;
  const answer = await askStore(options.store, requestWithBody(req, { method: 'PUT', url, headers: passedHeaders(headers) }, form.file));
  if (answer.statusCode !== 200) {
    res.writeHead(answer.statusCode, answer.headers);
    res.end(answer.body);
    return;
  }
  const etag = String(answer.headers.etag ?? '');
  const asked = form.fields.get('success_action_status');
  if (asked === '201') {
    const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<PostResponse><Bucket>${escapeXml(options.bucket)}</Bucket><Key>${escapeXml(key)}</Key><ETag>${escapeXml(etag)}</ETag></PostResponse>`;
    res.writeHead(201, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(xml), ETag: etag });
    res.end(xml);
    return;
  }
  res.writeHead(asked === '200' ? 200 : 204, { ETag: etag, ...(asked === '200' ? { 'Content-Length': 0 } : {}) });
  res.end();
}

/** The fields (names in lower case) and the one file of a form, with the policy checked before the file is read. */
function readForm(req: IncomingMessage, accept: (fields: Map<string, string>) => AcceptedForm): Promise<{ fields: Map<string, string>; accepted: AcceptedForm; file: Buffer }> {
  let parser: Busboy.Busboy;
  try {
    parser = Busboy({ headers: req.headers, limits: { fieldSize: formFieldBytes, fields: formFields, parts: formFields + 1, fieldNameSize: 256 } });
  } catch {
    throw new StoreRefusal('MalformedPOSTRequest', 'The body of your POST request is not well-formed multipart/form-data.');
  }
  return new Promise((resolve, reject) => {
    const fields = new Map<string, string>();
    let settled = false;
    let fileSeen = false;
    const fail = (refusal: StoreRefusal) => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      parser.removeAllListeners();
      parser.on('error', () => undefined);
      reject(refusal);
    };
    const receiveFile = (stream: Readable) => {
      fileSeen = true;
      let accepted: AcceptedForm;
      try {
        accepted = accept(fields);
      } catch (error) {
        stream.resume();
        fail(error as StoreRefusal);
        return;
      }
      const maxBytes = Math.min(accepted.maxBytes, largestFormFileBytes);
      const chunks: Buffer[] = [];
      let size = 0;
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          stream.resume();
          fail(new StoreRefusal('EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size.', { MaxSizeAllowed: maxBytes }));
        } else chunks.push(chunk);
      });
      stream.on('end', () => {
        if (settled) return;
        if (size < accepted.minBytes) {
          fail(new StoreRefusal('EntityTooSmall', 'Your proposed upload is smaller than the minimum allowed size.', { MinSizeAllowed: accepted.minBytes }));
          return;
        }
        settled = true;
        resolve({ fields, accepted, file: Buffer.concat(chunks) });
      });
    };
    parser.on('field', (name, value, info) => {
      // S3 ignores the fields after the file.
      if (fileSeen) return;
      if (info.nameTruncated || info.valueTruncated) {
        fail(new StoreRefusal('MaxPostPreDataLengthExceeded', 'Your POST request fields preceding the upload file were too large.'));
        return;
      }
      const lower = name.toLowerCase();
      if (lower === 'file') {
        receiveFile(Readable.from([Buffer.from(value)]));
        return;
      }
      if (fields.has(lower)) {
        fail(new StoreRefusal('InvalidArgument', 'A field appears more than once in the POST form.'));
        return;
      }
      fields.set(lower, value);
    });
    parser.on('file', (name, stream) => {
      if (fileSeen || name.toLowerCase() !== 'file') {
        stream.resume();
        fail(new StoreRefusal('InvalidArgument', 'POST requires exactly one file upload per request.'));
        return;
      }
      receiveFile(stream);
    });
    const tooManyFields = () => fail(new StoreRefusal('MaxPostPreDataLengthExceeded', 'Your POST request fields preceding the upload file were too large.'));
    parser.on('fieldsLimit', tooManyFields);
    parser.on('partsLimit', tooManyFields);
    parser.on('error', () => fail(new StoreRefusal('MalformedPOSTRequest', 'The body of your POST request is not well-formed multipart/form-data.')));
    parser.on('close', () => {
      if (!fileSeen) fail(new StoreRefusal('InvalidArgument', 'POST requires exactly one file upload per request.'));
    });
    req.on('aborted', () => fail(new StoreRefusal('IncompleteBody', 'You did not provide the number of bytes specified by the Content-Length HTTP header.')));
    req.pipe(parser);
  });
}
