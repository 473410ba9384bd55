import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

/** The S3 error codes the gateway answers with, and the status S3 gives each. */
const statuses = {
  AccessDenied: 403,
  SignatureDoesNotMatch: 403,
  InvalidAccessKeyId: 403,
  RequestTimeTooSkewed: 403,
  AuthorizationHeaderMalformed: 400,
  AuthorizationQueryParametersError: 400,
  EntityTooLarge: 400,
  EntityTooSmall: 400,
  IncompleteBody: 400,
  InvalidArgument: 400,
  InvalidPolicyDocument: 400,
  InvalidRequest: 400,
  InvalidURI: 400,
  MalformedPOSTRequest: 400,
  MaxPostPreDataLengthExceeded: 400,
  XAmzContentSHA256Mismatch: 400,
  MissingContentLength: 411,
  InternalError: 500,
  NotImplemented: 501,
} as const;

export type S3ErrorCode = keyof typeof statuses;

/** A request the gateway refuses, answered in S3's own shape. Messages never repeat what the client sent. */
export class StoreRefusal extends Error {
  readonly status: number;

  constructor(readonly code: S3ErrorCode, message: string, readonly detail: Record<string, string | number> = {}) {
    super(message);
    this.status = statuses[code];
  }
}

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** `<Error><Code>…</Code><Message>…</Message>…<RequestId>…</RequestId></Error>`, as S3 answers a refusal. */
export function refusalXml(refusal: StoreRefusal, requestId: string): string {
  const detail = Object.entries(refusal.detail).map(([name, value]) => `<${name}>${escapeXml(String(value))}</${name}>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${refusal.code}</Code><Message>${escapeXml(refusal.message)}</Message>${detail}<RequestId>${requestId}</RequestId></Error>`;
}

/** Answers a refusal. */
export function sendRefusal(res: ServerResponse, method: string | undefined, refusal: StoreRefusal): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const xml = refusalXml(refusal, requestId);
  res.writeHead(refusal.status, {
    'Content-Type': 'application/xml',
    'Content-Length': Buffer.byteLength(xml),
    'x-amz-request-id': requestId,
  });
  // A HEAD answer carries the status and headers only, as S3's does.
  res.end(method === 'HEAD' ? undefined : xml);
}
