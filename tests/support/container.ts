import { existsSync } from 'node:fs';

/** True when DOCKER_HOST or the default socket points at something that answers the Docker API. */
async function dockerAnswers(): Promise<boolean> {
  if (!process.env.DOCKER_HOST && !existsSync('/var/run/docker.sock')) return false;
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    const client = await getContainerRuntimeClient();
    return Boolean(client.info.containerRuntime.host);
  } catch {
    return false;
  }
}

/**
 * Starts PostgreSQL with testcontainers when an engine answers. TEST_PG_IMAGE
 * names the image (default the official postgres image), so a locally built
 * one can stand in where no registry is reachable.
 */
export async function startContainerIfAvailable(): Promise<{ url: string; description: string; stop: () => Promise<void> } | null> {
  if (!(await dockerAnswers())) return null;
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const image = process.env.TEST_PG_IMAGE ?? 'postgres:17-alpine';
  const container = await new PostgreSqlContainer(image).start();
  return {
    url: container.getConnectionUri(),
    description: `${container.getId().slice(0, 12)} (${image})`,
    stop: async () => {
      await container.stop();
    },
  };
}
