import type { FastifyReply, FastifyRequest } from 'fastify';

/** SCIM's media type (RFC 7644 §3.1): every answer is sent as it; requests may use it or plain JSON. */
export const SCIM_MEDIA_TYPE = 'application/scim+json';

/** Sends `body` as SCIM JSON with `status`. */
export function sendScim(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).header('content-type', `${SCIM_MEDIA_TYPE}; charset=utf-8`).send(JSON.stringify(body));
}

/**
 * The base of every URL a SCIM answer names (`Location`, `meta.location`,
 * `$ref`): PUBLIC_URL when set, since behind a proxy that ends TLS the
 * request itself says http://; else the request's own scheme and host
 * (docs/operations.md#configuration). `/scim/v2` is where src/app.ts mounts SCIM.
 */
export const scimBaseUrl =
  (publicUrl: string | undefined) =>
  (request: FastifyRequest): string =>
    `${publicUrl ?? `${request.protocol}://${request.host}`}/scim/v2`;
