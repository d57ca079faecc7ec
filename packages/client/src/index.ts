// The typed client of the departments-and-tenants service. The generated half
// (./generated: types, one function per operation, the fetch client they run
// on) comes from the service's OpenAPI document; this file adds what a caller
// needs on top: the envelope unwrapped, failures as typed values, the session
// (login, bearer token or API key), ETag / If-Match, and paged lists as async
// iterators.
import * as sdk from './generated/sdk.gen.js';
import { createClient, createConfig, type Client } from './generated/client/index.js';
import type { Operations } from './generated/operations.gen.js';

export type * from './generated/types.gen.js';
export type { Operations } from './generated/operations.gen.js';

/** An operation's name: its operationId in the OpenAPI document (`createDept`, `listTenants`, ...). */
export type OperationName = keyof Operations;

/** What a successful call answers: the envelope's `data` (`null` for most writes). */
export type Answer<K extends OperationName> = Operations[K]['responses'] extends { 200: infer Body }
  ? Body extends { data: infer Data }
    ? Data
    : Body
  : never;

/** The envelope `code`s an operation can fail with; the code is also the HTTP status. */
export type ErrorCode<K extends OperationName> = keyof Operations[K]['errors'] & number;

/** The request: `path`, `query` and `body` as the document names them, plus headers and `ifMatch`. */
export type Input<K extends OperationName> = Omit<Operations[K]['request'], 'url'> & {
  /** The ETag a read gave: the write is refused with 412 if the record changed since (`'*'`: if it exists). */
  ifMatch?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
};

type Args<K extends OperationName> = object extends Input<K> ? [input?: Input<K>] : [input: Input<K>];

/** A failed call: the service's envelope `{code, msg}` (or, when no envelope came, the HTTP status and text). */
export class ApiError<K extends OperationName = OperationName> extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly operation: K,
    /** The envelope's code; the HTTP status when the answer was not an envelope. */
    readonly code: ErrorCode<K>,
    /** The envelope's msg: what went wrong, in words a developer can act on. */
    readonly msg: string,
    /** The service's X-Request-Id, which its log lines carry. */
    readonly requestId: string | undefined,
  ) {
    super(`${operation}: ${code} ${msg}`);
  }
}

/** Whether `err` is an ApiError, and (given codes) one of those codes. */
export function isApiError<K extends OperationName = OperationName>(err: unknown, ...codes: number[]): err is ApiError<K> {
  return err instanceof ApiError && (codes.length === 0 || codes.includes(err.code as number));
}

/** A call's outcome as a value: the data and the record's ETag, or the typed error. */
export type Outcome<K extends OperationName> =
  | {
      ok: true;
      data: Answer<K>;
      /** A read's ETag, for a later write's `ifMatch`. */
      etag: string | undefined;
      /** A create's `Location`: the new record's path, whose last segment is its id. */
      location: string | undefined;
      response: Response;
    }
  | { ok: false; error: ApiError<K>; response: Response };

/** Every operation as a method answering its data, throwing an ApiError on failure. */
export type Api = { [K in OperationName]: (...args: Args<K>) => Promise<Answer<K>> };

type RowOf<K extends OperationName> = Answer<K> extends { rows: Array<infer Row> } ? Row : never;
/** The operations that answer a page `{total, rows}`. */
export type PagedOperation = { [K in OperationName]: [RowOf<K>] extends [never] ? never : K }[OperationName];
type PageQuery<K extends OperationName> = Omit<NonNullable<Operations[K]['request']['query']>, 'pageNum' | 'pageSize' | 'after'> & {
  pageSize?: number;
};
export type PageInput<K extends PagedOperation> = Omit<Input<K>, 'query'> & { query?: PageQuery<K> };

export interface ClientOptions {
  /** Where the service answers, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An access token from a login. */
  token?: string;
  /** An API key (`dtk_...`), sent as the bearer token; see the service's docs/security.md#api-keys. */
  apiKey?: string;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
}

export interface Credentials {
  /** The six-digit tenant code; the platform's is `000000`. */
  tenantId: string;
  username: string;
  password: string;
}

type RawResult = { data?: unknown; error?: unknown; response: Response };
const operations = sdk as unknown as Record<OperationName, (options: object) => Promise<RawResult>>;
const isEnvelope = (body: unknown): body is { code: number; msg: string; data: unknown } =>
  typeof body === 'object' && body !== null && 'code' in body && 'msg' in body;

export class DeptTenantClient {
  /** The generated fetch client underneath, for what this class does not wrap (interceptors, SSE). */
  readonly raw: Client;
  readonly api: Api;
  /** Where the service answers, as given. */
  readonly baseUrl: string;
  #bearer: string | undefined;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl;
    this.#bearer = options.token ?? options.apiKey;
    this.raw = createClient(createConfig({ baseUrl: options.baseUrl.replace(/\/$/, ''), ...(options.fetch ? { fetch: options.fetch } : {}) }));
    // Asked on every call that the document marks as needing the bearer token.
    this.raw.setConfig({ auth: () => this.#bearer });
    this.api = new Proxy({} as Api, {
      get: (_target, name) =>
        typeof name === 'string' && name in operations
          ? async (input?: object) => {
              const outcome = await this.call(name as OperationName, ...([input] as Args<OperationName>));
              if (!outcome.ok) throw outcome.error;
              return outcome.data;
            }
          : undefined,
    });
  }

  /** The bearer token sent now (an access token or an API key), if any. */
  get token(): string | undefined {
    return this.#bearer;
  }

  /** Sends this access token or API key from now on (undefined: none). */
  useToken(token: string | undefined): this {
    this.#bearer = token;
    return this;
  }

  /** Logs in and sends the access token from now on; answers the login's data (`access_token`, `expires_in`, ...). */
  async login(credentials: Credentials): Promise<Answer<'login'>> {
    const data = await this.api.login({ body: credentials });
    this.#bearer = data.access_token;
    return data;
  }

  /** Revokes the session of the current token and forgets it. */
  async logout(): Promise<void> {
    await this.api.logout();
    this.#bearer = undefined;
  }

  /** Calls one operation and answers its outcome as a value: never throws for an answer of the service. */
  async call<K extends OperationName>(operation: K, ...[input]: Args<K>): Promise<Outcome<K>> {
    const { ifMatch, headers, ...request } = (input ?? {}) as Input<K>;
    const send = operations[operation];
    if (!send) throw new TypeError(`No operation "${String(operation)}" in the service's OpenAPI document`);
    const { data, error, response } = await send({
      ...request,
      client: this.raw,
      headers: { ...headers, ...(ifMatch === undefined ? {} : { 'If-Match': ifMatch }) },
    });
    if (error !== undefined || !response.ok) {
      const body = error ?? data;
      const code = (isEnvelope(body) ? body.code : response.status) as ErrorCode<K>;
      const msg = isEnvelope(body) ? body.msg : typeof body === 'string' && body !== '' ? body : response.statusText;
      return { ok: false, error: new ApiError(operation, code, msg, response.headers.get('x-request-id') ?? undefined), response };
    }
    const header = (name: string) => response.headers.get(name) ?? undefined;
    return { ok: true, data: (isEnvelope(data) ? data.data : data) as Answer<K>, etag: header('etag'), location: header('location'), response };
  }

  /** A read with its ETag, for a later write's `ifMatch`; throws an ApiError on failure. */
  async read<K extends OperationName>(operation: K, ...args: Args<K>): Promise<{ data: Answer<K>; etag: string | undefined }> {
    const outcome = await this.call(operation, ...args);
    if (!outcome.ok) throw outcome.error;
    return { data: outcome.data, etag: outcome.etag };
  }

  /**
   * Every row of a paged list, fetching page after page as the loop asks
   * (`pageSize` rows at a time, 100 by default). The tenant list is walked by
   * its cursor (`after` the last id seen), so a page deep in the list costs
   * what the first does; the others by page number.
   */
  async *rows<K extends PagedOperation>(operation: K, input?: PageInput<K>): AsyncGenerator<RowOf<K>, void, undefined> {
    const { query, ...rest } = (input ?? {}) as PageInput<K> & { query?: { pageSize?: number } };
    const pageSize = query?.pageSize ?? 100;
    const byCursor = operation === 'listTenants';
    let after: string | undefined;
    for (let pageNum = 1; ; pageNum++) {
      const page = { ...query, pageSize, pageNum: byCursor ? 1 : pageNum, ...(after === undefined ? {} : { after }) };
      const data = (await this.read(operation, ...([{ ...rest, query: page }] as unknown as Args<K>))).data as { rows: RowOf<K>[] };
      yield* data.rows;
      if (data.rows.length < pageSize) return;
      if (byCursor) after = (data.rows[data.rows.length - 1] as { id: string }).id;
    }
  }
}

/** A client of the service at `baseUrl`; log in with `login()`, or pass a `token` or an `apiKey`. */
export function createDeptTenantClient(options: ClientOptions): DeptTenantClient {
  return new DeptTenantClient(options);
}
