import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Wait } from 'testcontainers';
import { PostgreSqlContainer, type StartedPostgreSqlContainer } from '@testcontainers/postgresql';
import { DeptTenantContainer, type CreatedTenant, type StartedDeptTenantContainer } from '@dept-tenant/testcontainers';

// The same snapshot and restore with the service on a PostgreSQL of its own
// (withDatabaseUrl), reached at the database container's address on the
// runtime's network. TEST_PG_IMAGE picks the image (CI: the one it builds).
let postgres: StartedPostgreSqlContainer;
let service: StartedDeptTenantContainer;
let acme: CreatedTenant;

beforeAll(async () => {
  postgres = await new PostgreSqlContainer(process.env.TEST_PG_IMAGE ?? 'postgres:17-alpine')
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .start();
  const network = postgres.getNetworkNames()[0]!;
  const url = `postgres://${postgres.getUsername()}:${postgres.getPassword()}@${postgres.getIpAddress(network)}:5432/${postgres.getDatabase()}`;
  service = await new DeptTenantContainer().withDatabaseUrl(url).start();
  acme = await service.createTenant({ tenantName: 'Acme on PostgreSQL' });
  await service.snapshot();
});
afterEach(() => service.restore());
afterAll(async () => {
  await service?.stop();
  await postgres?.stop();
});

describe('snapshot and restore on PostgreSQL', () => {
  it('runs on the PostgreSQL it was given', () => {
    expect(service.database).toBe('postgresql');
  });

  it('a test adds a department', async () => {
    const [root] = await acme.client.api.deptTree();
    await acme.client.api.createDept({ body: { parentId: root!.deptId, deptName: 'Temporary' } });
    expect((await acme.client.api.deptTree())[0]!.children).toHaveLength(1);
  });

  it('the next one finds the saved state', async () => {
    expect((await acme.client.api.deptTree())[0]!.children).toHaveLength(0);
  });
});
