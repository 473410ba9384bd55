import argon2 from 'argon2';

/** argon2id at OWASP's minimum (19 MiB, 2 passes, 1 lane): about 50 ms per hash here. */
const options = { type: argon2.argon2id, memoryCost: 19 * 1024, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, options);
}

// Verified against when the email is unknown, so that answer takes as long as a wrong password.
let decoy: Promise<string> | null = null;

export async function verifyPassword(hash: string | null, password: string): Promise<boolean> {
  decoy ??= hashPassword('decoy password, never matches');
  const matched = await argon2.verify(hash ?? (await decoy), password);
  return hash !== null && matched;
}
