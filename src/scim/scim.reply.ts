import type { FastifyReply } from 'fastify';

/** SCIM's media type (RFC 7644 §3.1): every answer is sent as it; requests may use it or plain JSON. */
export const SCIM_MEDIA_TYPE = 'application/scim+json';

/** Sends `body` as SCIM JSON with `status`. */
export function sendScim(reply: FastifyReply, status: number, body: unknown): FastifyReply {
  return reply.code(status).header('content-type', `${SCIM_MEDIA_TYPE}; charset=utf-8`).send(JSON.stringify(body));
}
