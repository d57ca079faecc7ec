import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
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
// to: the check runs inside the socket's DNS lookup (`guardedLookup`, the
// `connect.lookup` of the outbound agents), so a
// name that resolved to a public address when the URL was saved and to
// 127.0.0.1 now (DNS rebinding) is refused at connect time. An IP literal
// skips the lookup, so it is checked before the request (`checkLiteral`).

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Blocks of addresses, IPv4 and IPv6 (ipaddr.js does the parsing and the prefix arithmetic). */
export class AddressBlocks {
  constructor(private readonly blocks: readonly [Address, number][]) {}

  /** Whether `address` (parsed) lies in one of the blocks; an IPv4 address is never in an IPv6 block, nor the reverse. */
  includes(address: Address): boolean {
    return this.blocks.some(([network, prefix]) => network.kind() === address.kind() && address.match(network, prefix));
  }

  /** Whether the address written `text` lies in one of the blocks; false for text that is not an address. */
  check(text: string): boolean {
    return ipaddr.isValid(text) && this.includes(ipaddr.parse(text));
  }
}

/** Not reachable from the public internet, or not meant to be: loopback, private, link-local, unique-local, shared, documentation, multicast, reserved. */
const nonPublic = new AddressBlocks(
  [
    '0.0.0.0/8',
    '10.0.0.0/8',
    '100.64.0.0/10',
    '127.0.0.0/8',
    '169.254.0.0/16',
    '172.16.0.0/12',
    '192.0.0.0/24',
    '192.0.2.0/24',
    '192.88.99.0/24',
    '192.168.0.0/16',
    '198.18.0.0/15',
    '198.51.100.0/24',
    '203.0.113.0/24',
    '224.0.0.0/4',
    '240.0.0.0/4',
    // ::/96 holds :: and ::1 and the deprecated IPv4-compatible ::a.b.c.d.
    '::/96',
    '::1/128',
    '64:ff9b:1::/48',
    '100::/64',
    '2001::/23',
    '2001:db8::/32',
    'fc00::/7',
    'fe80::/10',
    'fec0::/10',
    'ff00::/8',
  ].map((block) => ipaddr.parseCIDR(block)),
);

export class AddressRuleError extends Error {}

/** One entry of OUTBOUND_ALLOWED_CIDRS: an address (a block of one) or a CIDR block, IPv4 in dotted-quad form only. */
function parseBlock(entry: string): [Address, number] | undefined {
  const [address = '', prefix] = entry.split('/');
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) return prefix === undefined ? [ipaddr.parse(address), 32] : cidr(entry);
  if (ipaddr.IPv6.isValid(address)) return prefix === undefined ? [ipaddr.parse(address), 128] : cidr(entry);
  return undefined;
}

function cidr(entry: string): [Address, number] | undefined {
  return ipaddr.isValidCIDR(entry) ? ipaddr.parseCIDR(entry) : undefined;
}

/** Parses OUTBOUND_ALLOWED_CIDRS (`127.0.0.0/8,::1/128,10.1.2.3`); throws naming the bad entry. */
export function parseAllowedCidrs(text: string | undefined): AddressBlocks | undefined {
  if (!text) return undefined;
  const blocks = text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => parseBlock(entry) ?? fail(entry));
  return new AddressBlocks(blocks);
}

function fail(entry: string): never {
  throw new AddressRuleError(`"${entry}" is not an IPv4 or IPv6 address or CIDR block`);
}

const NAT64 = ipaddr.IPv6.parse('64:ff9b::');
const SIX_TO_FOUR = ipaddr.IPv6.parse('2002::');

/**
 * An address embedding an IPv4 one (IPv4-mapped ::ffff:a.b.c.d, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) is judged as that IPv4 address, so
 * ::ffff:127.0.0.1 is loopback here as it is to the kernel.
 */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  const [hi, lo] = address.match(NAT64, 96) ? address.parts.slice(6) : address.match(SIX_TO_FOUR, 16) ? address.parts.slice(1, 3) : [];
  if (hi === undefined || lo === undefined) return undefined;
  return new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);
}

export interface AddressRule {
  allowed: AddressBlocks | undefined;
}

/** Rule: why `address` may not be connected to for `protocol`, or undefined when it may. */
function refusal(rule: AddressRule, address: string, protocol: string): string | undefined {
  const parsed = ipaddr.parse(address);
  const v4 = parsed.kind() === 'ipv6' ? embeddedIpv4(parsed as ipaddr.IPv6) : undefined;
  const judged = v4 ?? parsed;
  if (rule.allowed?.includes(judged) || (v4 && rule.allowed?.includes(parsed))) return undefined;
  if (protocol !== 'https:') return `address ${address} is not in OUTBOUND_ALLOWED_CIDRS, and http:// is allowed only there`;
  if (nonPublic.includes(judged)) return `address ${address} is not public and not in OUTBOUND_ALLOWED_CIDRS`;
  return undefined;
}

/** The hostname of a URL as a socket wants it (brackets of an IPv6 literal removed). */
function hostOf(url: URL): string {
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
