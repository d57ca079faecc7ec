import { createHash, randomBytes } from 'node:crypto';
import { TENANT_CODE } from '../core/common.schema.js';

// The key itself (docs/security.md#api-keys): `sk_` and the base64url of one
// length byte, the tenant's code and 32 random bytes. The random part is the
// secret; the tenant's code (not a secret: a login sends it too) lets the
// lookup name the tenant, as every statement on a tenant-owned table does.

const PREFIX = 'sk_';
const SECRET_BYTES = 32;
const TENANT_CODE_ONLY = new RegExp(`^${TENANT_CODE}$`);

/** A new key for `tenantId`, and the hash that is stored instead of it. */
export function newApiKey(tenantId: string): { key: string; hash: Buffer } {
  const tenant = Buffer.from(tenantId, 'utf8');
  const key = PREFIX + Buffer.concat([Buffer.from([tenant.length]), tenant, randomBytes(SECRET_BYTES)]).toString('base64url');
  return { key, hash: hashApiKey(key) };
}

export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(PREFIX);
}

/** The tenant a key names, or undefined when `token` is not shaped like one of our keys. */
export function apiKeyTenant(token: string): string | undefined {
  const body = token.slice(PREFIX.length);
  if (!/^[A-Za-z0-9_-]+$/.test(body)) return undefined;
  const bytes = Buffer.from(body, 'base64url');
  const length = bytes[0];
  if (length === undefined || length === 0 || bytes.length !== 1 + length + SECRET_BYTES) return undefined;
  const tenantId = bytes.toString('utf8', 1, 1 + length);
  return TENANT_CODE_ONLY.test(tenantId) ? tenantId : undefined;
}
