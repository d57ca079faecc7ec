/**
 * DATABASE_URL and DATABASE_DIRECT_URL as libpq writes them, including the
 * multi-host form a failover setup uses (docs/operations.md#failover):
 *
 *   postgres://user:password@h1:5432,h2:5432/db?target_session_attrs=read-write
 *
 * The WHATWG URL parser refuses a host list, so the host part is split here
 * and the rest is read from a single-host copy.
 */
export const APPLICATION_NAME = 'dept-tenant-service';

/**
 * The libpq values this service accepts. It writes, so the ones that choose a
 * standby (read-only, standby, prefer-standby) would only give it a server
 * that refuses its writes: they are refused at start with this list.
 */
const SESSION_ATTRS = ['any', 'read-write', 'primary'] as const;
type SessionAttrs = (typeof SESSION_ATTRS)[number];

export interface DatabaseTarget {
  hosts: { host: string; port: number }[];
  database: string;
  user: string;
  /** target_session_attrs from the URL, or undefined. */
  sessionAttrs: SessionAttrs | undefined;
}

export class DatabaseUrlError extends Error {}

export function parseDatabaseUrl(url: string): DatabaseTarget {
  const match = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)(.*)$/.exec(url);
  if (!match) throw new DatabaseUrlError('must start with postgres:// or postgresql://');
  const [, scheme, credentials, hostList, rest] = match as unknown as [string, string, string | undefined, string, string];
  const entries = hostList.split(',');
  if (entries.some((entry) => entry === '')) throw new DatabaseUrlError('names an empty host');
  let single: URL;
  try {
    single = new URL(`${scheme}${credentials === undefined ? '' : `${credentials}@`}${entries[0]}${rest}`);
  } catch {
    throw new DatabaseUrlError('is not a valid URL');
  }
  const hosts = entries.map((entry) => {
    let parsed: URL;
    try {
      parsed = new URL(`postgres://${entry}`);
    } catch {
      throw new DatabaseUrlError(`names an invalid host "${entry}"`);
    }
    const port = parsed.port === '' ? 5432 : Number(parsed.port);
    return { host: decodeURIComponent(parsed.hostname).replace(/^\[(.*)\]$/, '$1'), port };
  });
  const attrs = single.searchParams.get('target_session_attrs') ?? undefined;
  if (attrs !== undefined && !(SESSION_ATTRS as readonly string[]).includes(attrs)) {
    throw new DatabaseUrlError(`has target_session_attrs=${attrs}; this service writes, so use one of ${SESSION_ATTRS.join(', ')}`);
  }
  return {
    hosts,
    database: decodeURIComponent(single.pathname.slice(1)) || decodeURIComponent(single.username) || 'postgres',
    user: decodeURIComponent(single.username),
    sessionAttrs: attrs as SessionAttrs | undefined,
  };
}

/**
 * The postgres.js option for the session attributes. postgres.js 3.4.9 takes
 * `read-write` to mean "default_transaction_read_only is off", which a hot
 * standby also reports, so it would happily send writes to a standby; and it
 * refuses libpq's `any`. So `read-write` is asked of it as `primary` (not in
 * recovery, checked from in_hot_standby, which PostgreSQL 14+ reports at
 * connect), and a URL with several hosts and no attribute gets the same: this
 * service writes, so a standby is no use to it.
 */
export function targetSessionAttrs(target: DatabaseTarget): { target_session_attrs?: 'primary' } {
  const attrs = target.sessionAttrs ?? (target.hosts.length > 1 ? 'read-write' : 'any');
  if (attrs === 'any') return {};
  return { target_session_attrs: 'primary' };
}

/**
 * The URL for postgres.js: only the first host, and no target_session_attrs
 * (passed as an option instead, see targetSessionAttrs). The socket factory
 * (src/db/socket.factory.ts) dials whichever host is current, so postgres.js never
 * walks a host list itself: with several hosts, 3.4.9 leaves a statement
 * pending forever when the connection is lost while the first statement on a
 * new connection is in flight (it takes the loss for one more host to try).
 */
export function driverUrl(url: string): string {
  const single = url.replace(/^(postgres(?:ql)?:\/\/(?:[^@/?#]*@)?)([^,/?#]*)[^/?#]*/, '$1$2');
  return single.replace(/([?&])target_session_attrs=[^&#]*&?/, '$1').replace(/[?&]$/, '');
}
