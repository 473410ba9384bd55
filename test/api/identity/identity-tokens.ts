import { randomUUID } from 'node:crypto';
import { SignJWT, exportJWK, generateKeyPair, type JWK, type KeyLike } from 'jose';

/** Signing keys and id_tokens of a test identity provider, as a real OpenID provider would make them. */
export interface TestSigner {
  jwks: { keys: JWK[] };
  sign(claims: Record<string, unknown>, options?: { issuer?: string; audience?: string; expiresInS?: number; kid?: string }): Promise<string>;
}

export async function testSigner(issuer: string, audience: string, alg: 'RS256' | 'ES256' = 'RS256'): Promise<TestSigner> {
  const { publicKey, privateKey } = await generateKeyPair(alg);
  const kid = randomUUID();
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return {
    jwks: { keys: [jwk] },
    sign: (claims, options = {}) => signWith(privateKey, alg, options.kid ?? kid, claims, {
      issuer: options.issuer ?? issuer,
      audience: options.audience ?? audience,
      expiresInS: options.expiresInS ?? 300,
    }),
  };
}

function signWith(key: KeyLike, alg: string, kid: string, claims: Record<string, unknown>, options: { issuer: string; audience: string; expiresInS: number }): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg, kid })
    .setIssuer(options.issuer)
    .setAudience(options.audience)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + options.expiresInS)
    .sign(key);
}
