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
 * one can stand in where no registry is reachable (.ci/containers.sh builds
 * one and runs the suite through Podman's Docker API).
 *
 * Readiness is the server's log line, printed twice by the official image's
 * entrypoint: once by the temporary server that initialises the database,
 * once by the real one, which is listening by then. The module's own default
 * waits for a Docker health check, which Podman only runs from systemd
 * timers, so it never turns healthy on a machine without systemd; a port
 * check would exec into the container, which under Podman leaves a conmon
 * process behind for minutes. TEST_PG_STARTUP_TIMEOUT_MS overrides the
 * startup timeout (default 120 s).
 */
export async function startContainerIfAvailable(): Promise<{ url: string; description: string; stop: () => Promise<void> } | null> {
  if (!(await dockerAnswers())) return null;
  const { Wait } = await import('testcontainers');
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const image = process.env.TEST_PG_IMAGE || 'postgres:17-alpine';
  const startupTimeout = Number(process.env.TEST_PG_STARTUP_TIMEOUT_MS) || 120_000;
  const container = await new PostgreSqlContainer(image)
    .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
    .withStartupTimeout(startupTimeout)
    .start();
  return {
    url: container.getConnectionUri(),
    description: `${container.getId().slice(0, 12)} (${image})`,
    stop: async () => {
      await container.stop();
    },
  };
}
