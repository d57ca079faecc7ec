#!/bin/sh
# How the service is started by npm start, the container image and npm run
# bench (docs/operations.md#node-settings). Extra node options go before the
# script: sh scripts/start.sh --cpu-prof
#
# V8's young generation, per semi-space: on PostgreSQL 32 MiB. Smaller, a
# by-id read under load spent a large part of the service's CPU in young-
# generation collections, for no difference in resident memory
# (docs/benchmark.md). The embedded database keeps 8 MiB: that process also
# holds PGlite, and the young generation's high-water mark stays resident.
# MALLOC_ARENA_MAX=2: glibc's malloc arenas shared by all threads (see the
# Dockerfile).
if [ -n "${DATABASE_URL:-}" ]; then semi=32; else semi=8; fi
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
exec "${NODE:-node}" --max-semi-space-size="$semi" "$@" dist/main.js
