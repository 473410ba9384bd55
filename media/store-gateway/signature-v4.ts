import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { StoreRefusal } from './s3-error';

/**
 * AWS Signature Version 4 as S3 checks it: the Authorization header of a signed request, the query
 * of a presigned URL, and the signing key a POST policy is signed with. Canonical forms follow
 * AWS's rules (each path segment and query component decoded and encoded again, the query sorted by
 * name, header values trimmed), so a request verifies whichever client signed it, the `minio`
 * client's requests and presigned URLs among them.
 */

export const signatureAlgorithm = 'AWS4-HMAC-SHA256';
export const unsignedPayload = 'UNSIGNED-PAYLOAD';
/** S3 refuses a header-signed request dated further than this from its own clock. */
const allowedSkewMs = 15 * 60 * 1000;
/** The longest a presigned URL may be valid: a week. */
const longestPresignS = 7 * 24 * 3600;

export interface StoreCredentials {
  accessKey: string;
  secretKey: string;
  region: string;
}

/** What a verified signature says about the request. */
export interface VerifiedRequest {
  /** The payload hash the signature covers: hex SHA-256, or `UNSIGNED-PAYLOAD`. */
  payloadHash: string;
}

/** S3's encoding of one URI component: every byte but the unreserved characters. */
export function uriEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A percent-decoded component, or a refusal for broken escapes. */
export function uriDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new StoreRefusal('InvalidURI', "Couldn't parse the specified URI.");
  }
}

/** The last key derived: every request of a day signs with the same one. */
let lastSigningKey: { of: string; key: Buffer } = { of: '', key: Buffer.alloc(0) };

export function signingKey(secretKey: string, day: string, region: string): Buffer {
  const of = `${secretKey}\n${day}\n${region}`;
  if (lastSigningKey.of !== of) lastSigningKey = { of, key: deriveSigningKey(secretKey, day, region) };
  return lastSigningKey.key;
}

function deriveSigningKey(secretKey: string, day: string, region: string): Buffer {
  const dated = createHmac('sha256', `AWS4${secretKey}`).update(day).digest();
  const regional = createHmac('sha256', dated).update(region).digest();
  const service = createHmac('sha256', regional).update('s3').digest();
  return createHmac('sha256', service).update('aws4_request').digest();
}

export function hmacHex(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('hex');
}

export function sameSignature(expected: string, given: string): boolean {
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** `yyyymmddThhmmssZ`, the form of `X-Amz-Date`; null when it is not one. */
export function parseAmzDate(text: string | undefined): Date | null {
  const match = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text ?? '');
  if (!match) return null;
  const [, year, month, day, hour, minute, second] = match.map(Number);
  const date = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  return Number.isNaN(date.getTime()) ? null : date;
}

/**
 * `<access key>/<yyyymmdd>/<region>/s3/aws4_request`: the credential's scope must name this store's
 * key and region and the day of the request's date.
 */
export function checkCredential(credential: string, amzDate: string, credentials: StoreCredentials, malformed: 'AuthorizationHeaderMalformed' | 'AuthorizationQueryParametersError' | 'InvalidArgument'): string {
  const parts = credential.split('/');
  if (parts.length !== 5 || parts[3] !== 's3' || parts[4] !== 'aws4_request' || !/^\d{8}$/.test(parts[1])) {
    throw new StoreRefusal(malformed, 'The credential is malformed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".');
  }
  if (parts[0] !== credentials.accessKey) {
    throw new StoreRefusal('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  }
  if (parts[2] !== credentials.region) {
    throw new StoreRefusal(malformed, `The credential's region is wrong; expecting '${credentials.region}'.`);
  }
  if (parts[1] !== amzDate.slice(0, 8)) {
    throw new StoreRefusal(malformed, "The credential's date does not match the request's date.");
  }
  return parts[1];
}

/** The path as S3 signs it: each segment decoded, then encoded again. */
function canonicalPath(rawPath: string): string {
  return rawPath.split('/').map((segment) => uriEncode(uriDecode(segment))).join('/');
}

/** The query as S3 signs it: every component decoded and encoded again, sorted by name, then value. */
function canonicalQuery(rawQuery: string, leaveOut: string | null): string {
  const pairs = rawQuery.split('&').filter(Boolean).map((component) => {
    const at = component.indexOf('=');
    const name = uriDecode(at < 0 ? component : component.slice(0, at));
    const value = at < 0 ? '' : uriDecode(component.slice(at + 1));
    return [uriEncode(name), uriEncode(value)] as const;
  }).filter(([name]) => name !== leaveOut);
  pairs.sort(([nameA, valueA], [nameB, valueB]) => (nameA === nameB ? compare(valueA, valueB) : compare(nameA, nameB)));
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function headerValue(headers: IncomingHttpHeaders, name: string): string {
  const value = headers[name];
  return (Array.isArray(value) ? value.join(',') : value ?? '').trim().replace(/ +/g, ' ');
}

interface SignedParts {
  method: string;
  rawPath: string;
  rawQuery: string;
  headers: IncomingHttpHeaders;
  signedHeaders: string[];
  payloadHash: string;
  amzDate: string;
  day: string;
  /** The query component left out of the canonical query (a presigned URL's own signature). */
  leaveOut: string | null;
}

function expectedSignature(parts: SignedParts, credentials: StoreCredentials): string {
  const canonicalRequest = [
    parts.method,
    canonicalPath(parts.rawPath),
    canonicalQuery(parts.rawQuery, parts.leaveOut),
    parts.signedHeaders.map((name) => `${name}:${headerValue(parts.headers, name)}\n`).join(''),
    parts.signedHeaders.join(';'),
    parts.payloadHash,
  ].join('\n');
  const scope = `${parts.day}/${credentials.region}/s3/aws4_request`;
  const stringToSign = [signatureAlgorithm, parts.amzDate, scope, createHash('sha256').update(canonicalRequest).digest('hex')].join('\n');
  return hmacHex(signingKey(credentials.secretKey, parts.day, credentials.region), stringToSign);
}

/**
 * The signed headers must name `host` and every `x-amz-*` header the request carries: an unsigned
 * `x-amz-copy-source` would otherwise turn someone's presigned PUT into a copy of any object.
 */
function checkSignedHeaders(signedHeaders: string[], headers: IncomingHttpHeaders, refusal: () => StoreRefusal): void {
  if (!signedHeaders.includes('host')) throw refusal();
  const unsigned = Object.keys(headers).filter((name) => name.startsWith('x-amz-') && !signedHeaders.includes(name));
  if (unsigned.length) throw new StoreRefusal('AccessDenied', 'There were headers present in the request which were not signed.');
}

/** A request signed in its Authorization header (the service's own `minio` client). */
export function verifyHeaderSignature(request: { method: string; rawPath: string; rawQuery: string; headers: IncomingHttpHeaders }, credentials: StoreCredentials, now: Date): VerifiedRequest {
  const authorization = String(request.headers.authorization ?? '');
  // Built only when thrown: an error's stack costs more than the rest of a good request's check.
  const malformed = () => new StoreRefusal('AuthorizationHeaderMalformed', 'The authorization header is malformed; it requires Credential, SignedHeaders and Signature.');
  if (!authorization.startsWith(`${signatureAlgorithm} `)) {
    throw new StoreRefusal('InvalidRequest', 'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.');
  }
  const components = new Map(authorization.slice(signatureAlgorithm.length + 1).split(',').map((component) => {
    const [name, ...value] = component.trim().split('=');
    return [name, value.join('=')] as const;
  }));
  const credential = components.get('Credential');
  const signedHeaders = components.get('SignedHeaders')?.split(';');
  const signature = components.get('Signature');
  if (!credential || !signedHeaders || !signature) throw malformed();

  const amzDate = headerValue(request.headers, 'x-amz-date');
  const date = parseAmzDate(amzDate);
  if (!date) throw new StoreRefusal('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header.');
  const day = checkCredential(credential, amzDate, credentials, 'AuthorizationHeaderMalformed');
  if (Math.abs(now.getTime() - date.getTime()) > allowedSkewMs) {
    throw new StoreRefusal('RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
  }
  const payloadHash = headerValue(request.headers, 'x-amz-content-sha256');
  if (!payloadHash) throw new StoreRefusal('InvalidRequest', 'Missing required header for this request: x-amz-content-sha256.');
  if (payloadHash !== unsignedPayload && !/^[0-9a-f]{64}$/.test(payloadHash)) {
    // Chunk-signed streaming uploads are not needed by any client of the service.
    throw new StoreRefusal('NotImplemented', 'A header you provided implies functionality that is not implemented.');
  }
  checkSignedHeaders(signedHeaders, request.headers, malformed);
  const expected = expectedSignature({ ...request, signedHeaders, payloadHash, amzDate, day, leaveOut: null }, credentials);
  if (!sameSignature(expected, signature)) {
    throw new StoreRefusal('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.');
  }
  return { payloadHash };
}

/** A presigned URL (query authentication): its signature, and that it has not expired. */
export function verifyQuerySignature(request: { method: string; rawPath: string; rawQuery: string; query: URLSearchParams; headers: IncomingHttpHeaders }, credentials: StoreCredentials, now: Date): VerifiedRequest {
  const { query } = request;
  const parametersError = (message: string) => new StoreRefusal('AuthorizationQueryParametersError', message);
  if (query.get('X-Amz-Algorithm') !== signatureAlgorithm) throw parametersError('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256".');
  const names = ['X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature'];
  if (names.some((name) => query.getAll(name).length !== 1)) {
    throw parametersError('Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.');
  }
  const amzDate = query.get('X-Amz-Date')!;
  const date = parseAmzDate(amzDate);
  if (!date) throw parametersError("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\".");
  const expires = query.get('X-Amz-Expires')!;
  if (!/^\d{1,7}$/.test(expires) || Number(expires) > longestPresignS) {
    throw parametersError('X-Amz-Expires must be a number of seconds from 0 to 604800 (a week).');
  }
  const day = checkCredential(query.get('X-Amz-Credential')!, amzDate, credentials, 'AuthorizationQueryParametersError');
  if (date.getTime() - now.getTime() > allowedSkewMs) throw new StoreRefusal('AccessDenied', 'Request is not valid yet.');
  if (now.getTime() > date.getTime() + Number(expires) * 1000) throw new StoreRefusal('AccessDenied', 'Request has expired.');
  const signedHeaders = query.get('X-Amz-SignedHeaders')!.split(';');
  checkSignedHeaders(signedHeaders, request.headers, () => parametersError('X-Amz-SignedHeaders must name host.'));
  const expected = expectedSignature({ ...request, signedHeaders, payloadHash: unsignedPayload, amzDate, day, leaveOut: 'X-Amz-Signature' }, credentials);
  if (!sameSignature(expected, query.get('X-Amz-Signature')!)) {
    throw new StoreRefusal('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.');
  }
  return { payloadHash: unsignedPayload };
}
