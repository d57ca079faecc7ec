#!/usr/bin/env bash
# The example as a consumer gets it: both packages packed from this clone
# (npm pack, so what would be published is what is tested), installed from
# the tarballs into this project alone, and its suite run. Needs a container
# engine (DOCKER_HOST, TESTCONTAINERS_* as testcontainers reads them) and the
# service's image (DEPT_TENANT_IMAGE, default dept-tenant-service:latest).
#   bash examples/consumer/run.sh [vitest arguments]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/../.."
rm -rf "$here/.packs" "$here/node_modules"
mkdir -p "$here/.packs"
(cd "$root" && npm pack --silent --workspace packages/client --workspace packages/testcontainers --pack-destination "$here/.packs" >/dev/null)
ls "$here/.packs"
# No lockfile: the tarballs change with every pack; the registry packages are pinned exactly in package.json.
(cd "$here" && npm install --no-package-lock --no-audit --no-fund --ignore-scripts)
# What the consumer got is the packed packages, not links into this repository.
for p in client testcontainers; do
  [ ! -L "$here/node_modules/@dept-tenant/$p" ] || { echo "@dept-tenant/$p is a link, not the packed package"; exit 1; }
done
cd "$here"
# The suite type-checks against the packages' declarations first, as a consumer's build would.
npx tsc -p .
exec npx vitest run "$@"
