# Multi-stage build on the current Node LTS (24, as .nvmrc), pinned to an
# exact release so a rebuild gets the Node that was tested (.ci/run runs the
# suite on this version and reads it from here). The base image is a build
# argument so a locally built Node image can stand in where no registry is
# reachable (.ci/containers.sh), or another supported line can be tried:
#   docker build --build-arg NODE_IMAGE=node:26-slim -t dept-tenant-service .
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci applies them (postinstall, patch-package): the fixes carried for postgres.js.
COPY patches ./patches
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npx tsc -p tsconfig.build.json

FROM ${NODE_IMAGE} AS runtime-deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE}
# MALLOC_ARENA_MAX=2: glibc gives each thread that mallocs under contention an arena of its
# own, each keeping its high-water mark; V8's compiling threads (PGlite's WASM in embedded mode)
# left memory resident that way (docs/benchmark.md#memory-of-the-embedded-mode). npm start sets it too.
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 DATA_DIR=/app/data MANAGEMENT_PORT=9464 MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=runtime-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY sql ./sql
# The embedded database (used when DATABASE_URL is unset) lives in the volume.
RUN mkdir -p /app/data && chown node:node /app/data
# The operator's commands (docs/operations.md#commands) as `dept-tenant <command>`.
RUN chmod +x dist/cli/cli.main.js && ln -s /app/dist/cli/cli.main.js /usr/local/bin/dept-tenant
USER node
# The embedded database's cluster made and migrated here, schema only (no admin, no token secret: the
# first start makes those), so a container's first start skips initdb and the migrations. A new volume
# starts as a copy of it; an empty directory mounted there is initialised at start as before.
RUN DATA_DIR=/app/data dept-tenant migrate
# 9464: the management listener, /metrics for Prometheus (docs/operations.md#metrics); keep it off the public network.
EXPOSE 8080 9464
VOLUME ["/app/data"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# V8's young generation sized by database (32 MiB semi-spaces on PostgreSQL, 8 MiB embedded;
# why: the script). npm start and npm run bench start the service the same way.
COPY scripts/start.sh ./scripts/
CMD ["sh", "scripts/start.sh"]
