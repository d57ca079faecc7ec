import { Agent, type Dispatcher } from 'undici';
import { checkLiteral, guardedLookup, type AddressRule } from './outbound.address.js';

// The connections of every outbound call: undici keep-alive agents, one per
// rule and URL protocol, whose every new connection resolves its host through
// the guarded lookup (`connect.lookup`, src/outbound/outbound.address.ts). The
// agent's connector is where the rule can see the address a socket is about to
// connect to, which a plain fetch does not expose; a reused connection was
// judged when it was made. The protocol is part of the rule (http:// only to
// an allowed address) and the lookup does not see the URL, hence one agent
// per protocol.

/** The agents of one rule, by URL protocol. */
interface OutboundAgents {
  'http:': Agent;
  'https:': Agent;
}

/** Connections one agent keeps open at once to one origin; more requests wait for a free one. */
const MAX_CONNECTIONS = 256;

const agents = new WeakMap<AddressRule, OutboundAgents>();

function agent(rule: AddressRule, protocol: keyof OutboundAgents): Agent {
  return new Agent({ connections: MAX_CONNECTIONS, connect: { lookup: guardedLookup(rule, protocol) } });
}

/** The rule's agent for `url`'s protocol (the same one for the same rule object): what a request to `url` is dispatched through. */
export function dispatcherFor(rule: AddressRule, url: URL): Dispatcher {
  let pair = agents.get(rule);
  if (!pair) {
    pair = { 'http:': agent(rule, 'http:'), 'https:': agent(rule, 'https:') };
    agents.set(rule, pair);
  }
  return pair[url.protocol as keyof OutboundAgents];
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

/**
 * One request to `url` (from outboundUrl) through the rule's agent, with
 * undici's `request` (the answer's body a stream the caller reads or
 * dumps). A redirect is an answer like any other: `request` follows none.
 */
export function outboundRequest(
  rule: AddressRule,
  url: URL,
  options: { method: Dispatcher.HttpMethod; headers: Record<string, string>; body?: Buffer; signal: AbortSignal },
): Promise<Dispatcher.ResponseData> {
  return dispatcherFor(rule, url).request({ origin: url.origin, path: `${url.pathname}${url.search}`, ...options });
}
