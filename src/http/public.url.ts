/**
 * The base of every absolute URL the service hands out (redirect URIs,
 * SCIM's Location and meta.location): PUBLIC_URL when it is set (behind a
 * TLS proxy the request itself says http:// and the proxy's inner address),
 * else the request's own protocol and Host.
 */
export function publicBase(request: { protocol: string; host: string }, publicUrl: string | undefined): string {
  return publicUrl ?? `${request.protocol}://${request.host}`;
}
