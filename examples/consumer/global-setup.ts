import type { TestProject } from 'vitest/node';
import { DeptTenantContainer, type StartedDeptTenantContainer } from '@dept-tenant/testcontainers';

// One service for the whole run: started once, its address and the
// superadmin's token handed to every test file (vitest's provide/inject),
// stopped at the end. Each file then creates a tenant of its own, so files
// running in parallel never see each other's data.
declare module 'vitest' {
  export interface ProvidedContext {
    deptTenant: { baseUrl: string; adminToken: string };
  }
}

let service: StartedDeptTenantContainer | undefined;

export async function setup(project: TestProject): Promise<void> {
  service = await new DeptTenantContainer().start();
  project.provide('deptTenant', { baseUrl: service.getBaseUrl(), adminToken: service.getAdminToken() });
}

export async function teardown(): Promise<void> {
  await service?.stop();
}
