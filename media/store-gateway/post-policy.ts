import { StoreRefusal } from './s3-error';
import { checkCredential, hmacHex, parseAmzDate, sameSignature, signatureAlgorithm, signingKey, type StoreCredentials } from './signature-v4';

/**
 * A browser-form upload (`POST /<bucket>`, multipart) checked as S3 checks it: the policy's
 * signature, its expiration, every condition (the exact key, the content type, the ticket's stamp…),
 * no form field the policy does not name, and the file's size within `content-length-range` (that
 * last one by the caller, while the file streams in).
 */

/** What a form that passed its policy may store. */
export interface AcceptedForm {
  key: string;
  minBytes: number;
  maxBytes: number;
}

/** Fields that S3 never matches against the policy. */
const exemptFields = new Set(['policy', 'x-amz-signature', 'file']);

type Condition = { kind: 'eq' | 'starts-with'; field: string; value: string; text: string } | { kind: 'range'; min: number; max: number };

function invalidPolicy(message: string): StoreRefusal {
  return new StoreRefusal('InvalidPolicyDocument', `Invalid Policy: ${message}`);
}

function parseConditions(conditions: unknown): Condition[] {
  if (!Array.isArray(conditions)) throw invalidPolicy("Invalid 'conditions' value: must be a list.");
  return conditions.map((condition): Condition => {
    if (condition && typeof condition === 'object' && !Array.isArray(condition)) {
      const entries = Object.entries(condition);
      if (entries.length !== 1 || typeof entries[0][1] !== 'string') throw invalidPolicy('Invalid simple condition.');
      const [field, value] = entries[0] as [string, string];
      return { kind: 'eq', field: field.replace(/^\$/, '').toLowerCase(), value, text: JSON.stringify(condition) };
    }
    if (!Array.isArray(condition) || condition.length !== 3) throw invalidPolicy('Invalid condition.');
    const [operator, first, second] = condition;
    const operation = String(operator).toLowerCase();
    if (operation === 'content-length-range') {
      const [min, max] = [Number(first), Number(second)];
      if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || max < min) throw invalidPolicy('Invalid content-length-range.');
      return { kind: 'range', min, max };
    }
    if ((operation !== 'eq' && operation !== 'starts-with') || typeof first !== 'string' || !first.startsWith('$') || typeof second !== 'string') {
      throw invalidPolicy('Invalid condition.');
    }
    return { kind: operation, field: first.slice(1).toLowerCase(), value: second, text: JSON.stringify(condition) };
  });
}

function checkSignature(fields: Map<string, string>, credentials: StoreCredentials): void {
  if (!fields.has('policy')) throw new StoreRefusal('AccessDenied', 'Access Denied');
  if (fields.has('awsaccesskeyid') || fields.get('x-amz-algorithm') !== signatureAlgorithm) {
    throw new StoreRefusal('InvalidRequest', 'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.');
  }
  const amzDate = fields.get('x-amz-date') ?? '';
  if (!parseAmzDate(amzDate)) throw new StoreRefusal('InvalidArgument', 'x-amz-date must be in the ISO8601 Long Format.');
  const day = checkCredential(fields.get('x-amz-credential') ?? '', amzDate, credentials, 'InvalidArgument');
  const expected = hmacHex(signingKey(credentials.secretKey, day, credentials.region), fields.get('policy')!);
  if (!sameSignature(expected, fields.get('x-amz-signature') ?? '')) {
    throw new StoreRefusal('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.');
  }
}

/** `fields`: the form's fields before its file, names in lower case. */
export function checkPostPolicy(fields: Map<string, string>, bucket: string, credentials: StoreCredentials, now: Date): AcceptedForm {
  checkSignature(fields, credentials);
  let policy: { expiration?: unknown; conditions?: unknown };
  try {
    policy = JSON.parse(Buffer.from(fields.get('policy')!, 'base64').toString('utf8'));
  } catch {
    throw invalidPolicy('Invalid JSON.');
  }
  if (!policy || typeof policy !== 'object') throw invalidPolicy('Invalid JSON.');
  const expiration = typeof policy.expiration === 'string' ? Date.parse(policy.expiration) : Number.NaN;
  if (Number.isNaN(expiration)) throw invalidPolicy("Invalid 'expiration' value.");
  if (expiration < now.getTime()) throw new StoreRefusal('AccessDenied', 'Invalid according to Policy: Policy expired.');

  const conditions = parseConditions(policy.conditions);
  let range = { min: 0, max: Number.POSITIVE_INFINITY };
  const named = new Set<string>();
  for (const condition of conditions) {
    if (condition.kind === 'range') {
      range = { min: condition.min, max: condition.max };
      continue;
    }
    named.add(condition.field);
    const actual = condition.field === 'bucket' ? bucket : fields.get(condition.field);
    const holds = condition.kind === 'eq' ? actual === condition.value : (actual ?? '').startsWith(condition.value);
    if (!holds) throw new StoreRefusal('AccessDenied', `Invalid according to Policy: Policy Condition failed: ${condition.text}`);
  }
  if ([...fields.keys()].some((name) => !exemptFields.has(name) && !name.startsWith('x-ignore-') && !named.has(name))) {
    throw new StoreRefusal('AccessDenied', 'Invalid according to Policy: Extra input fields.');
  }
  const key = fields.get('key');
  if (!key) throw new StoreRefusal('InvalidArgument', "Bucket POST must contain a field named 'key'.");
  return { key, minBytes: range.min, maxBytes: range.max };
}
