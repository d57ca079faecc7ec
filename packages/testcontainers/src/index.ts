// A testcontainers module for the departments-and-tenants service: the
// service's image started for a test run, ready when /readyz answers, with
// its superadmin logged in, tenants provisioned in one call, and the whole
// service brought back to a saved state between tests.
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { AbstractStartedContainer, GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { createDeptTenantClient, type DeptTenantClient, type Tenant, type TenantCreateWritable } from '@dept-tenant/client';

/** The image's name when none is given: build it from the service's repository with `docker build -t dept-tenant-service .` */
export const DEFAULT_IMAGE = 'dept-tenant-service:latest';
const PORT = 8080;
/** The management listener's port (/metrics), which the image exposes. */
const MANAGEMENT_PORT = 9464;
const PLATFORM_TENANT = '000000';
/** How many of the service's last log lines a failed start reports. */
const LOG_LINES = 40;
/** Where snapshots are written inside the container: one file each, `<prefix><name>.jsonl`. */
const SNAPSHOT_PREFIX = '/tmp/dept-tenant-snapshot-';

/** The service's log, the last lines kept: testcontainers removes a container whose start failed, and its log with it. */
class LogTail {
  private lines: string[] = [];
  private partial = '';
  consume = (stream: Readable): void => {
    stream.on('data', (chunk: Buffer | string) => {
      const text = this.partial + chunk.toString();
      const lines = text.split('\n');
      this.partial = lines.pop() ?? '';
      this.lines.push(...lines);
      if (this.lines.length > LOG_LINES) this.lines.splice(0, this.lines.length - LOG_LINES);
    });
  };
  text(): string {
    return [...this.lines, this.partial].filter((line) => line !== '').join('\n');
  }
}

export class DeptTenantContainer extends GenericContainer {
  private adminPassword = 'testcontainers-admin-1';
  private databaseUrl: string | undefined;
  private readonly log = new LogTail();
  private userLogConsumer: ((stream: Readable) => unknown) | undefined;

  /** `image`: the service's image, by default `DEPT_TENANT_IMAGE` or {@link DEFAULT_IMAGE}. */
  constructor(image: string = process.env.DEPT_TENANT_IMAGE ?? DEFAULT_IMAGE) {
    super(image);
    // Every port the image exposes is published: Podman lists them all as bindings, and testcontainers waits for each.
    this.withExposedPorts(PORT, MANAGEMENT_PORT)
      .withEnvironment({
        PORT: String(PORT),
        HOST: '0.0.0.0',
        MANAGEMENT_PORT: String(MANAGEMENT_PORT),
        MANAGEMENT_HOST: '0.0.0.0',
        LOG_LEVEL: 'info',
      })
      .withWaitStrategy(Wait.forHttp('/readyz', PORT).forStatusCode(200))
      .withStartupTimeout(60_000);
    super.withLogConsumer((stream) => {
      this.log.consume(stream);
      this.userLogConsumer?.(stream);
    });
  }

  /** The platform superadmin's password (`admin` of tenant 000000); it seeds an empty database only. */
  withAdminPassword(password: string): this {
    this.adminPassword = password;
    return this;
  }

  /**
   * A PostgreSQL the service uses instead of its embedded database, as the
   * container reaches it (a container's network address, not the host's
   * `localhost`). The database must exist; the service migrates it.
   */
  withDatabaseUrl(url: string): this {
    this.databaseUrl = url;
    return this;
  }

  /** Your log consumer gets the service's log too; the container keeps its own tail for a failed start's error. */
  override withLogConsumer(consumer: (stream: Readable) => unknown): this {
    this.userLogConsumer = consumer;
    return this;
  }

  override async start(): Promise<StartedDeptTenantContainer> {
    this.withEnvironment({ ADMIN_PASSWORD: this.adminPassword, ...(this.databaseUrl ? { DATABASE_URL: this.databaseUrl } : {}) });
    let started: StartedTestContainer;
    try {
      started = await super.start();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(`The dept-tenant service did not start: ${message}\n--- last lines of its log ---\n${this.log.text() || '(nothing logged)'}`, {
        cause: err,
      });
    }
    const container = new StartedDeptTenantContainer(started, this.adminPassword, this.databaseUrl === undefined ? 'embedded' : 'postgresql');
    await container.admin.login({ tenantId: PLATFORM_TENANT, username: 'admin', password: this.adminPassword });
    return container;
  }
}

/** A tenant made by {@link StartedDeptTenantContainer.createTenant}, with a client logged in as its first admin. */
export interface CreatedTenant {
  tenant: Tenant;
  /** Logged in as the tenant's admin (`username`, `password` as given, or the defaults). */
  client: DeptTenantClient;
  username: string;
  password: string;
}

/** A tenant's fields as createTenant takes them, every one optional; `username` and `password` name its first admin. */
export type TenantInput = Partial<TenantCreateWritable>;

/**
 * Creates a tenant with its first admin through `admin` (a client logged in
 * as the superadmin, or as an admin of the tenant to create it under), and
 * answers it with a client logged in as the new admin. Every field has a
 * default: a unique name, the admin `admin` with a generated password. For
 * test files that share one container through vitest's provide/inject and
 * so hold a token, not the container.
 */
export async function createTenant(admin: DeptTenantClient, input: TenantInput = {}): Promise<CreatedTenant> {
  const name = input.tenantName ?? `Tenant ${randomBytes(4).toString('hex')}`;
  const username = input.username ?? 'admin';
  const password = input.password ?? `pw-${randomBytes(9).toString('base64url')}`;
  const created = await admin.call('createTenant', {
    body: { companyName: name, contactUserName: 'Test', contactPhone: '13800000000', ...input, tenantName: name, username, password },
  });
  if (!created.ok) throw created.error;
  const id = created.location!.split('/').pop()!;
  const tenant = await admin.api.getTenant({ path: { id } });
  const client = createDeptTenantClient({ baseUrl: admin.baseUrl });
  await client.login({ tenantId: tenant.tenantId, username, password });
  return { tenant, client, username, password };
}

export class StartedDeptTenantContainer extends AbstractStartedContainer {
  /** A client logged in as the platform superadmin (`admin` of tenant 000000). */
  readonly admin: DeptTenantClient;
  private snapshots = 0;
  private lastSnapshot: string | undefined;

  constructor(
    started: StartedTestContainer,
    private readonly adminPassword: string,
    /** Where the service keeps its data: its embedded database, or the PostgreSQL given with withDatabaseUrl. */
    readonly database: 'embedded' | 'postgresql',
  ) {
    super(started);
    this.admin = this.client();
  }

  /** Where the service answers, e.g. `http://localhost:32771`. */
  getBaseUrl(): string {
    return `http://${this.getHost()}:${this.getMappedPort(PORT)}`;
  }

  /** The service's Prometheus metrics (the management listener's /metrics). */
  getMetricsUrl(): string {
    return `http://${this.getHost()}:${this.getMappedPort(MANAGEMENT_PORT)}/metrics`;
  }

  /** The superadmin's access token. */
  getAdminToken(): string {
    return this.admin.token!;
  }

  getAdminPassword(): string {
    return this.adminPassword;
  }

  /** A new client of this service: anonymous, or with a token or API key. */
  client(auth: { token?: string; apiKey?: string } = {}): DeptTenantClient {
    return createDeptTenantClient({ baseUrl: this.getBaseUrl(), ...auth });
  }

  /**
   * Creates a tenant below the platform with its first admin, and answers it
   * with a client logged in as that admin (see {@link createTenant}).
   */
  createTenant(input: TenantInput = {}): Promise<CreatedTenant> {
    return createTenant(this.admin, input);
  }

  /**
   * Saves the whole service's state (every table, sessions included) inside
   * the container with `dept-tenant backup`, and answers its name for
   * restore(). On the embedded database the running service writes it.
   */
  async snapshot(name = `snapshot-${++this.snapshots}`): Promise<string> {
    if (!/^[\w.-]+$/.test(name)) throw new Error(`A snapshot's name is letters, digits, ".", "_" and "-": "${name}"`);
    await this.dataCommand(['dept-tenant', 'backup', `${SNAPSHOT_PREFIX}${name}.jsonl`]);
    this.lastSnapshot = name;
    return name;
  }

  /**
   * Brings the whole service back to a snapshot (the last one by default):
   * data and sessions as they were, the service's caches dropped, ids
   * handed out since never handed out again. Tokens issued before the
   * snapshot, like the superadmin's, stay valid.
   */
  async restore(name = this.lastSnapshot): Promise<void> {
    if (name === undefined) throw new Error('No snapshot to restore: call snapshot() first');
    await this.dataCommand(['dept-tenant', 'restore', `${SNAPSHOT_PREFIX}${name}.jsonl`]);
  }

  private async dataCommand(command: string[]): Promise<void> {
    const result = await this.exec(command);
    if (result.exitCode !== 0) throw new Error(`${command.join(' ')} failed in the container (exit ${result.exitCode}): ${result.output.trim()}`);
  }
}
