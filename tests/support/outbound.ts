import { parseAllowedCidrs } from '../../src/outbound/outbound.address.js';

/** A test app's configuration for outbound calls to these blocks (OUTBOUND_ALLOWED_CIDRS), e.g. loopback for a provider on 127.0.0.1. */
export function testOutbound(cidrs: string) {
  return { outbound: { allowed: parseAllowedCidrs(cidrs) } };
}
