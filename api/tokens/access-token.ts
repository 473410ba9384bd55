import { SignJWT, jwtVerify } from 'jose';

/**
 * Access tokens are short-lived HS256 JWTs naming the user. Their format is opaque to clients
 * (the contract: token strings are opaque); revocation is by their short lifetime and by the user
 * row disappearing at deletion.
 */
const keys = new Map<string, Uint8Array>();

function keyFor(secret: string): Uint8Array {
  let key = keys.get(secret);
  if (!key) {
    key = new TextEncoder().encode(secret);
    keys.set(secret, key);
  }
  return key;
}

export async function signAccessToken(secret: string, userId: string, ttlSeconds: number): Promise<string> {
  return new SignJWT({ typ: 'access' })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(userId)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(keyFor(secret));
}

/** The user id of a valid, unexpired access token; null for anything else. */
export async function verifyAccessToken(secret: string, token: string): Promise<string | null> {
  try {
    const { payload } = await jwtVerify(token, keyFor(secret), { algorithms: ['HS256'] });
    return payload.typ === 'access' && typeof payload.sub === 'string' ? payload.sub : null;
  } catch {
    return null;
  }
}
