import { createHmac, randomBytes } from 'node:crypto';

// Standard Webhooks signing (standardwebhooks.com; docs/webhooks.md#verifying).
// The signature covers `id.timestamp.body` where body is the exact bytes
// sent: the body is serialised once, signed, and those same bytes are
// written to the socket, so a receiver never has to re-serialise to verify.

const PREFIX = 'whsec_';

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes. */
export function newSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

/** `v1,<base64 HMAC-SHA256>` for each secret, space-separated (a rotated endpoint signs with both). */
function signatureHeader(secrets: string[], id: string, timestamp: number, body: Buffer): string {
  return secrets
    .map((secret) => {
      const mac = createHmac('sha256', keyOf(secret));
      mac.update(`${id}.${timestamp}.`);
      mac.update(body);
      return `v1,${mac.digest('base64')}`;
    })
    .join(' ');
}

/** The three headers of one delivery attempt, signed now. */
export function signedHeaders(secrets: string[], id: string, body: Buffer, now = Date.now()): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, id, timestamp, body),
  };
}
