import { BlockList, isIP } from 'node:net';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';

// Which addresses an outbound call may connect to (docs/webhooks.md#addresses):
// a webhook delivery, and any other call this service makes to a URL it was
// given (an identity provider's discovery document, its keys, its token
// endpoint).
//
// Such a URL is a caller's input, so without a rule it would let any tenant
// admin make this service send requests into the network it runs in (the
// database, a metadata service, an admin port). The rule: only public
// addresses, unless an address lies in OUTBOUND_ALLOWED_CIDRS; http:// only
// to an allowed address. It is checked on the address actually connected
// to: the check runs inside the socket's DNS lookup (`guardedLookup`), so a
// name that resolved to a public address when the URL was saved and to
// 127.0.0.1 now (DNS rebinding) is refused at connect time. An IP literal
// skips the lookup, so it is checked before the request (`checkLiteral`).

/** Not reachable from the public internet, or not meant to be: loopback, private, link-local, unique-local, shared, documentation, multicast, reserved. */
const NON_PUBLIC: [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.88.99.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  // ::/96 holds :: and ::1 and the deprecated IPv4-compatible ::a.b.c.d.
  ['::', 96, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['64:ff9b:1::', 48, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001::', 23, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['fec0::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

const nonPublic = new BlockList();
for (const [net, prefix, family] of NON_PUBLIC) nonPublic.addSubnet(net, prefix, family);

export class AddressRuleError extends Error {}

/** Parses OUTBOUND_ALLOWED_CIDRS (`127.0.0.0/8,::1/128,10.1.2.3`); throws naming the bad entry. */
export function parseAllowedCidrs(text: string | undefined): BlockList | undefined {
  if (!text) return undefined;
  const list = new BlockList();
  for (const entry of text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [address, prefixText] = entry.split('/') as [string, string?];
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? max : Number(prefixText);
    if (!family || !Number.isInteger(prefix) || prefix < 0 || prefix > max || (prefixText !== undefined && !/^\d+$/.test(prefixText))) {
      throw new AddressRuleError(`"${entry}" is not an IPv4 or IPv6 address or CIDR block`);
    }
    list.addSubnet(address, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return list;
}

/**
 * An address embedding an IPv4 one (IPv4-mapped ::ffff:a.b.c.d, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) is judged as that IPv4 address, so
 * ::ffff:127.0.0.1 is loopback here as it is to the kernel.
 */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4})(?::|$)/.exec(lower);
  const pair = hex ?? sixToFour;
  if (!pair) return undefined;
  const hi = parseInt(pair[1]!, 16);
  const lo = parseInt(pair[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

export interface AddressRule {
  allowed: BlockList | undefined;
}

/** Rule: why `address` may not be connected to for `protocol`, or undefined when it may. */
function refusal(rule: AddressRule, address: string, protocol: string): string | undefined {
  const v4 = isIP(address) === 6 ? embeddedIpv4(address) : undefined;
  const [checked, family] = v4 ? [v4, 'ipv4' as const] : [address, isIP(address) === 4 ? ('ipv4' as const) : ('ipv6' as const)];
  if (rule.allowed?.check(checked, family) || (v4 && rule.allowed?.check(address, 'ipv6'))) return undefined;
  if (protocol !== 'https:') return `address ${address} is not in OUTBOUND_ALLOWED_CIDRS, and http:// is allowed only there`;
  if (nonPublic.check(checked, family)) return `address ${address} is not public and not in OUTBOUND_ALLOWED_CIDRS`;
  return undefined;
}

/** The hostname of a URL as a socket wants it (brackets of an IPv6 literal removed). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** An IP-literal host is connected to without a lookup, so it is judged here, before the request. */
export function checkLiteral(rule: AddressRule, url: URL): void {
  const host = hostOf(url);
  if (!isIP(host)) return;
  const why = refusal(rule, host, url.protocol);
  if (why) throw new AddressRuleError(why);
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for net.connect (through an http Agent): resolves the name,
 * then refuses the connection when an address it would connect to breaks
 * the rule. Every address returned is judged, so a name with one public and
 * one private address is refused rather than raced.
 */
export function guardedLookup(rule: AddressRule, protocol: string) {
  return (hostname: string, options: { all?: boolean; family?: number | string }, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true } as { all: true }, (err, addresses) => {
      if (err) return callback(err, options.all ? [] : '', 0);
      for (const { address } of addresses) {
        const why = refusal(rule, address, protocol);
        if (why) return callback(Object.assign(new AddressRuleError(`${hostname}: ${why}`), { code: 'EADDRNOTALLOWED' }), options.all ? [] : '', 0);
      }
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}
