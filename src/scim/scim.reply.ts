import type { FastifyReply, FastifyRequest } from 'fastify';
import { publicBase } from '../http/public.url.js';

/** SCIM's media type (RFC 7644 §3.1): every answer is sent as it; requests may use it or plain JSON. */
export const SCIM_MEDIA_TYPE = 'application/scim+json';

/** Sends `body` as SCIM JSON with `status`. */
export function sendScim(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).header('content-type', `${SCIM_MEDIA_TYPE}; charset=utf-8`).send(JSON.stringify(body));
}

/**
 * The base of every URL a SCIM answer names (`Location`, `meta.location`,
 * `$ref`): the service's public base (PUBLIC_URL, else the request's own,
 * http/public.url.ts) and `/scim/v2`, where src/app.ts mounts SCIM.
 */
export const scimBaseUrl =
  (publicUrl: string | undefined) =>
  (request: FastifyRequest): string =>
    `${publicBase(request, publicUrl)}/scim/v2`;
