import http from 'node:http';
import https from 'node:https';
import { checkLiteral, guardedLookup, hostOf, type AddressRule } from './outbound.address.js';

// The connections of every outbound call: keep-alive agents, one pair per
// rule, whose every new connection resolves its host through the guarded
// lookup (src/outbound/outbound.address.ts). The agent is where the rule can
// see the address a socket is about to connect to, which a global fetch does
// not expose; a reused connection was judged when it was made.

/** The agents of one rule, by URL protocol. */
interface OutboundAgents {
  'http:': http.Agent;
  'https:': https.Agent;
}

/** Connections one agent keeps open at once to one host and port; more wait for a free one. */
const MAX_SOCKETS = 256;

const agents = new WeakMap<AddressRule, OutboundAgents>();

/** Keep-alive agents whose every new connection goes through the guarded lookup; the same pair for the same rule object. */
function agentsFor(rule: AddressRule): OutboundAgents {
  let pair = agents.get(rule);
  if (!pair) {
    pair = {
      'http:': new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, lookup: guardedLookup(rule, 'http:') as never }),
      'https:': new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, lookup: guardedLookup(rule, 'https:') as never }),
    };
    agents.set(rule, pair);
  }
  return pair;
}

/**
 * The URL of an outbound call, parsed and judged before anything is sent:
 * http(s) only, and an IP-literal host must pass the rule now, since it
 * connects without the lookup that judges a name. Throws otherwise.
 */
export function outboundUrl(rule: AddressRule, text: string): URL {
  const url = new URL(text);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`${url.protocol} is not http(s)`);
  checkLiteral(rule, url);
  return url;
}

/** A request to `url` (from outboundUrl) through the rule's agents; nothing is sent until the caller ends it. */
export function outboundRequest(
  rule: AddressRule,
  url: URL,
  { method, headers }: { method: string; headers: http.OutgoingHttpHeaders },
  onResponse: (response: http.IncomingMessage) => void,
): http.ClientRequest {
  const protocol = url.protocol as keyof OutboundAgents;
  return (protocol === 'https:' ? https : http).request(
    {
      protocol,
      hostname: hostOf(url),
      port: url.port || undefined,
      path: `${url.pathname}${url.search}`,
      method,
      agent: agentsFor(rule)[protocol],
      headers,
    },
    onResponse,
  );
}
