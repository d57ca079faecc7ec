import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import bcrypt from 'bcryptjs';

// Salted scrypt from node:crypto, stored as `scrypt$N$r$p$salt$hash` so the
// cost can be raised later without invalidating stored hashes.
const N = 16384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

// A person brought in from RuoYi-Vue-Plus (docs/migrate-from-ruoyi.md#passwords) keeps
// RuoYi's BCrypt hash until the first login that succeeds with it, which
// replaces it by an scrypt hash (src/auth/auth.service.ts).
const BCRYPT = /^\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{53}$/;

/** A hash the service did not make (RuoYi's BCrypt): verified, then replaced at the first login it opens. */
export const isForeignHash = (stored: string): boolean => BCRYPT.test(stored);

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  if (isForeignHash(stored)) return bcrypt.compare(password, stored);
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await derive(password, Buffer.from(salt, 'base64'), { N: Number(n), r: Number(r), p: Number(p) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** Verified against when the user does not exist, so timing does not reveal which names exist. */
export const DUMMY_HASH = await hashPassword(randomBytes(16).toString('hex'));

/** Stored for a user created without a password (SCIM): not a scrypt hash, so verifyPassword never matches it. */
export const NO_PASSWORD_HASH = '!';

export function randomPassword(): string {
  return randomBytes(12).toString('base64url');
}
