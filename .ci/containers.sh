#!/usr/bin/env bash
# shellcheck disable=SC2016 # single-quoted node -e / sh -c programs are meant literally
# CI, container paths, on a machine with no Docker engine and no
# container image registry:
#   1. the test suite through testcontainers, against a PostgreSQL container
#      started by Podman's Docker-compatible API;
#   2. the project's Dockerfile, built, checked (no dev dependencies, not
#      root), run against the host's PostgreSQL, logged into, stopped;
#   3. the example consumer (examples/consumer) on that image: the packages
#      packed and installed from their tarballs, its suite run through
#      @dept-tenant/testcontainers; the container bench's short mode.
# Base images are built locally from Debian packages (debootstrap + podman
# import) and kept, with Podman's storage, in a cache directory outside the
# clone, so later runs reuse them.
#
#   bash .ci/containers.sh            (as root, from anywhere)
#   bash .ci/containers.sh --prepare  host packages, Podman and the two base
#                                     images only: no suite, no project image.
#                                     .ci/run does this in the background while
#                                     it runs the other suites; the full run
#                                     after it then finds everything in place.
#
# Environment (all optional):
#   DEPT_CI_CACHE       cache directory (default /var/cache/dept-tenant-ci)
#   CI_HOST_PG_URL      host PostgreSQL admin URL (default postgres://postgres@127.0.0.1:5432/test);
#                       the image is run against a fresh database created there and dropped after
#   DEBIAN_MIRROR       URL of the Debian archive debootstrap fetches from (default: the one
#                       this machine's apt sources fetch Debian bookworm from; see
#                       debian_archive_from_apt)
#   DEPT_CI_LOCK_WAIT   seconds to wait for another run holding the cache (default 900)
#   CI_SUITE_NODE       directory of the `node` that runs the test suite (put first on PATH
#                       for it; default: the node on PATH)
#   CI_IMAGE_NODE       the node binary the stand-in Node base image is made from, with the
#                       npm on PATH (default: the node on PATH); best the version the
#                       Dockerfile's NODE_IMAGE names
#   CI_SUITE_REPORT     file to copy the suite's Vitest JSON report to (for a caller's totals)
#
# Nothing global is changed beyond installing Debian packages: Podman reads
# its configuration from the cache directory (CONTAINERS_CONF,
# CONTAINERS_STORAGE_CONF, exported to this script's children only), its API
# socket is in a temporary directory, DOCKER_HOST is set for the test command
# only, and /var/run/docker.sock is never created.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=full
case "${1:-}" in
  "") ;;
  --prepare) MODE=prepare ;;
  *)
    echo "usage: bash .ci/containers.sh [--prepare]" >&2
    exit 2
    ;;
esac

CACHE="${DEPT_CI_CACHE:-/var/cache/dept-tenant-ci}"
HOST_PG_URL="${CI_HOST_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-}" # found when first needed (debootstrap_root)
SUITE=bookworm
STATE_DIR=/run/dept-tenant-ci # Podman's runroot and tmp_dir; fixed, as Podman's database records them
PG_REPO=localhost/dept-ci-postgres
NODE_REPO=localhost/dept-ci-node
APP_IMAGE=localhost/dept-tenant-service:ci
APP_PORT_DB_NAME="dept_ci_$(date -u +%Y%m%d%H%M%S)_$$"

# ---------------------------------------------------------------- reporting
START=$(date +%s)
PART="" PART_START=0
PART_LOG=()
ts() { date -u +%H:%M:%SZ; }
minutes() { awk -v s="$1" 'BEGIN { printf "%.1f min", s / 60 }'; }
part() {
  part_done
  PART="$1" PART_START=$(date +%s)
  printf '\n=== [%s] %s\n' "$(ts)" "$PART"
}
part_done() {
  [ -n "$PART" ] || return 0
  local took=$(($(date +%s) - PART_START))
  PART_LOG+=("$(printf '%-34s %s' "$PART" "$(minutes "$took")")")
  printf '=== [%s] %s: done in %s\n' "$(ts)" "$PART" "$(minutes "$took")"
  PART=""
}
step() { printf -- '--- [%s] %s\n' "$(ts)" "$*"; }
# long SECONDS LOG COMMAND...: COMMAND under timeout, its output into LOG and
# (QUIET unset) onto ours. It runs in the background so that a signal to this
# script interrupts the wait at once and the cleanup stops the step (timeout
# passes the signal on to the command's whole process group).
CHILD=""
long() {
  local secs="$1" log="$2" rc=0 tailer=""
  shift 2
  : >"$log"
  timeout "$secs" "$@" >"$log" 2>&1 </dev/null &
  CHILD=$!
  if [ -z "${QUIET:-}" ]; then
    tail -n +1 -f --pid="$CHILD" "$log" &
    tailer=$!
  fi
  wait "$CHILD" || rc=$?
  [ -z "$tailer" ] || wait "$tailer" || true
  CHILD=""
  [ "$rc" -ne 124 ] || printf 'containers.sh: timed out after %s s: %s\n' "$secs" "$*" >&2
  return "$rc"
}
die() {
  printf 'containers.sh: FAILED: %s\n' "$*" >&2
  exit 1
}
summary() {
  printf '\n=== containers.sh timings\n'
  local line
  for line in "${PART_LOG[@]}"; do printf '  %s\n' "$line"; done
  printf '  %-34s %s\n' "total" "$(minutes $(($(date +%s) - START)))"
}

# ------------------------------------------------------------------ cleanup
RUN_DIR="" WORK_DIR="" SERVICE_PID="" APP_CTR="" FRESH_DB=""
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  if [ -n "$CHILD" ]; then
    kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD" 2>/dev/null
  fi
  if [ $rc -ne 0 ]; then
    printf '\n=== [%s] containers.sh failed (exit %s) during: %s\n' "$(ts)" "$rc" "${PART:-setup}"
    if [ -n "$RUN_DIR" ] && [ -s "$RUN_DIR/podman-service.log" ]; then
      echo "--- podman service log (tail)"
      tail -n 20 "$RUN_DIR/podman-service.log"
    fi
  fi
  if [ -n "$APP_CTR" ]; then
    timeout 60 podman rm -f -v -t 5 "$APP_CTR" >/dev/null 2>&1
  fi
  if [ -n "$SERVICE_PID" ]; then
    # Containers testcontainers left behind (no Ryuk to reap them). This run
    # holds the cache lock, so every container in this storage is ours.
    timeout 60 podman ps -aq --filter label=org.testcontainers=true 2>/dev/null |
      xargs -r timeout 60 podman rm -f -t 5 >/dev/null 2>&1
    kill "$SERVICE_PID" 2>/dev/null
    for _ in $(seq 1 20); do kill -0 "$SERVICE_PID" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$SERVICE_PID" 2>/dev/null
    rm -f "$STATE_DIR/service.pid"
  fi
  if [ -n "$FRESH_DB" ]; then
    timeout 60 psql "$HOST_PG_URL" -qX -c "DROP DATABASE IF EXISTS $FRESH_DB WITH (FORCE)" >/dev/null 2>&1
  fi
  [ -n "$WORK_DIR" ] && rm -rf "$WORK_DIR"
  [ -n "$RUN_DIR" ] && rm -rf "$RUN_DIR"
  part_done
  summary
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

[ "$(id -u)" = 0 ] || die "run as root (installs packages, runs rootful Podman)"
if [ ! -d node_modules/testcontainers ] || [ ! -d node_modules/@testcontainers/postgresql ]; then
  die "node_modules lacks testcontainers: run npm ci first (.ci/run does)"
fi
mkdir -p "$CACHE"/{conf,images,debs} "$STATE_DIR"
RUN_DIR=$(mktemp -d /tmp/dept-ci.XXXXXX)

# ======================================================= 1. host packages
part "host packages"
packages=(podman runc conmon uidmap slirp4netns fuse-overlayfs containernetworking-plugins iptables debootstrap)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
command -v curl >/dev/null || missing+=(curl)
command -v psql >/dev/null && command -v pg_isready >/dev/null || missing+=(postgresql-client)
if [ ${#missing[@]} -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # One apt-get at a time with .ci/run's own installs (its DEPT_CI_APT_LOCK), which may run meanwhile.
  apt_lock=${DEPT_CI_APT_LOCK:-/var/lock/dept-ci-apt.lock}
  QUIET=1 long 900 "$RUN_DIR/apt.log" flock -w 600 "$apt_lock" apt-get -o DPkg::Lock::Timeout=120 update -qq ||
    { tail -n 30 "$RUN_DIR/apt.log"; die "apt-get update"; }
  # No podman-docker: it would create /var/run/docker.sock, which other test
  # runs on this machine would then take for a Docker engine.
  QUIET=1 long 1200 "$RUN_DIR/apt.log" flock -w 600 "$apt_lock" apt-get -o DPkg::Lock::Timeout=120 install -y -qq --no-install-recommends "${missing[@]}" ||
    { tail -n 30 "$RUN_DIR/apt.log"; die "apt-get install"; }
else
  step "already installed: ${packages[*]}"
fi
podman --version
runc --version | head -n 1

# ================================================ 2. Podman configuration
part "podman setup"
step "lock $CACHE (one run at a time uses its storage)"
exec 9>"$CACHE/lock"
flock -w "${DEPT_CI_LOCK_WAIT:-900}" 9 || die "another run held $CACHE/lock for too long"

step "configuration in $CACHE/conf"
# runc, because crun fails on this host ("cgroups in hybrid mode not
# supported"); cgroupfs and file events, as there is no systemd; ulimits,
# because the containers otherwise inherit limits PostgreSQL cannot start with.
cat >"$CACHE/conf/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
log_driver = "k8s-file"

[network]
network_config_dir = "$CACHE/conf/cni"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$STATE_DIR/libpod"
EOF
cat >"$CACHE/conf/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$CACHE/storage"
runroot = "$STATE_DIR/storage"
EOF
export CONTAINERS_CONF="$CACHE/conf/containers.conf"
export CONTAINERS_STORAGE_CONF="$CACHE/conf/storage.conf"
# Podman runs health checks from systemd timers; there is no systemd here. The
# checks are run on demand instead (podman healthcheck run).
export DISABLE_HC_SYSTEMD=true

# A service left by a run that was killed outright (no trap) would hold the storage.
if [ -s "$STATE_DIR/service.pid" ]; then
  old=$(cat "$STATE_DIR/service.pid")
  if tr '\0' ' ' <"/proc/$old/cmdline" 2>/dev/null | grep -q 'system service'; then
    step "stopping a podman service left by an earlier run (pid $old)"
    kill "$old" || true
    sleep 2
  fi
  rm -f "$STATE_DIR/service.pid"
fi

if ! timeout 120 podman info >/dev/null 2>"$RUN_DIR/podman-info.err"; then
  cat "$RUN_DIR/podman-info.err"
  step "podman storage unusable; starting it afresh (images come back from $CACHE/images)"
  umount "$CACHE/storage/overlay" 2>/dev/null || true
  rm -rf "$CACHE/storage" "$STATE_DIR/storage" "$STATE_DIR/libpod"
  timeout 120 podman info >/dev/null
fi
size_gb=$(du -sxBG "$CACHE/storage" 2>/dev/null | cut -f1 | tr -dc 0-9)
if [ "${size_gb:-0}" -gt "${DEPT_CI_MAX_STORAGE_GB:-12}" ]; then
  step "storage is ${size_gb} GB; starting it afresh"
  timeout 120 podman rm -af -t 0 >/dev/null || true
  umount "$CACHE/storage/overlay" 2>/dev/null || true
  rm -rf "$CACHE/storage" "$STATE_DIR/storage" "$STATE_DIR/libpod"
fi
step "removing containers left by earlier runs"
timeout 120 podman rm -af -t 5
timeout 120 podman volume prune -f >/dev/null
timeout 60 podman info --format 'podman {{.Version.Version}}, runtime {{.Host.OCIRuntime.Name}}, cgroups {{.Host.CgroupsVersion}} ({{.Host.CgroupManager}}), storage {{.Store.GraphDriverName}} at {{.Store.GraphRoot}}'

# Prints the URL of the Debian archive this machine's apt already fetches
# $SUITE from, so the script names no archive host of its own and builds
# from the same place as the host's packages. It is the first enabled `deb`
# source whose suites include $SUITE itself: that passes over the security
# archive ($SUITE-security) and third-party repositories (suites of their
# own). deb822 files (sources.list.d/*.sources; Debian 12 keeps its archives
# in debian.sources) are read before one-line lists (sources.list,
# sources.list.d/*.list). $1: the apt configuration directory. Fails, printing
# nothing, if no source serves $SUITE.
debian_archive_from_apt() {
  local etc="${1:-/etc/apt}" f uri
  for f in "$etc"/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    # Stanzas are separated by blank lines; a line starting with white space
    # continues the field above it; Enabled: no switches a stanza off.
    uri=$(awk -v suite="$SUITE" '
      function stanza_end(   n, i, s, u) {
        if (v["types"] ~ /(^|[ \t])deb([ \t]|$)/ && tolower(v["enabled"]) != "no") {
          n = split(v["suites"], s)
          for (i = 1; i <= n; i++) if (s[i] == suite) {
            split(v["uris"], u)
            if (u[1] ~ /^(https?|file):/) { print u[1]; found = 1; exit }
          }
        }
        delete v
        field = ""
      }
      /^#/ { next }
      /^[ \t]*$/ { stanza_end(); next }
      /^[ \t]/ { if (field != "") v[field] = v[field] " " $0; next }
      {
        i = index($0, ":")
        field = tolower(substr($0, 1, i - 1))
        v[field] = substr($0, i + 1)
        gsub(/^[ \t]+|[ \t]+$/, "", v[field])
      }
      END { if (!found) stanza_end() }
    ' "$f")
    [ -z "$uri" ] || { echo "${uri%/}"; return 0; }
  done
  for f in "$etc/sources.list" "$etc"/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    # deb [options] uri suite component...; the options may hold spaces.
    uri=$(awk -v suite="$SUITE" '
      /^[ \t]*deb[ \t]/ {
        line = $0
        sub(/#.*/, "", line)
        gsub(/\[[^]]*\]/, " ", line)
        split(line, w)
        if (w[3] == suite && w[2] ~ /^(https?|file):/) { print w[2]; exit }
      }
    ' "$f")
    [ -z "$uri" ] || { echo "${uri%/}"; return 0; }
  done
  return 1
}
# Builds a Debian root file system (minbase) into $1, with packages $2.
WORK_DIR=$(mktemp -d "$CACHE/work.XXXXXX") # on the cache's file system: root file systems are hundreds of MB
debootstrap_root() {
  local dir="$1" include="${2:-}" log
  log="$RUN_DIR/debootstrap-$(basename "$dir").log"
  # Only here, so that a run whose images are all cached needs no Debian source.
  if [ -z "$DEBIAN_MIRROR" ]; then
    DEBIAN_MIRROR=$(debian_archive_from_apt) ||
      die "no apt source on this machine serves Debian $SUITE (no enabled deb source with suite $SUITE in /etc/apt/sources.list.d/*.sources, /etc/apt/sources.list or /etc/apt/sources.list.d/*.list): set DEBIAN_MIRROR to a Debian archive's URL"
  fi
  step "debootstrap --variant=minbase ${include:+--include=$include }$SUITE ($DEBIAN_MIRROR)"
  QUIET=1 long 900 "$log" debootstrap --variant=minbase ${include:+--include="$include"} --cache-dir="$CACHE/debs" \
    "$SUITE" "$dir" "$DEBIAN_MIRROR" || { tail -n 30 "$log"; die "debootstrap"; }
  # What images do not need: package lists and archives, documentation, translations.
  rm -rf "$dir"/var/cache/apt/*.bin "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* \
    "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/* "$dir"/usr/share/locale/*
  find "$dir/var/log" -type f -delete
}
# Reuses image $1 (name:tag) if Podman has it, else imports the cached root
# file system tarball $2, else runs $3 to build the root file system in a
# directory it is given, archives it as $2 and imports it. Further arguments:
# podman import --change instructions.
ensure_image() {
  local image="$1" tarball="$2" build="$3"
  shift 3
  local changes=() c
  for c in "$@"; do changes+=(--change "$c"); done
  if timeout 60 podman image exists "$image"; then
    step "reusing $image"
    return 0
  fi
  if [ ! -s "$tarball" ]; then
    local root
    root="$WORK_DIR/$(basename "$tarball" .tar)"
    mkdir -p "$root"
    "$build" "$root"
    step "archiving the root file system to $tarball"
    QUIET=1 long 300 "$RUN_DIR/tar.log" tar --numeric-owner -C "$root" -cf "$tarball.tmp" . ||
      { cat "$RUN_DIR/tar.log"; die "tar"; }
    mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
  else
    step "importing $image from the cached $tarball"
  fi
  QUIET=1 long 300 "$RUN_DIR/import.log" podman import -q "${changes[@]}" "$tarball" "$image" ||
    { cat "$RUN_DIR/import.log"; die "podman import"; }
  step "imported $image ($(du -sh "$tarball" | cut -f1) root file system)"
}
# Drops the other tags of image $1's repository, and the other tarballs in
# $2's directory whose names start like $2's up to the key (the last "-").
drop_old_versions() {
  local image="$1" tarball="$2" old
  for old in $(timeout 60 podman images --format '{{.Repository}}:{{.Tag}}' "${image%:*}" | grep -vxF "$image" || true); do
    step "removing the outdated image $old"
    timeout 60 podman rmi "$old" >/dev/null 2>&1 || true
  done
  find "$(dirname "$tarball")" -maxdepth 1 -name "$(basename "${tarball%-*}")-*.tar" ! -name "$(basename "$tarball")" -print -delete
}

step "podman system service on $RUN_DIR/podman.sock"
SOCKET="$RUN_DIR/podman.sock"
podman system service --time=0 "unix://$SOCKET" >"$RUN_DIR/podman-service.log" 2>&1 &
SERVICE_PID=$!
echo "$SERVICE_PID" >"$STATE_DIR/service.pid"
for _ in $(seq 1 60); do
  [ "$(curl -s --max-time 2 --unix-socket "$SOCKET" http://podman/_ping 2>/dev/null)" = OK ] && break
  kill -0 "$SERVICE_PID" 2>/dev/null || die "podman system service exited: $(tail -n 5 "$RUN_DIR/podman-service.log")"
  sleep 0.5
done
[ "$(curl -s --max-time 2 --unix-socket "$SOCKET" http://podman/_ping)" = OK ] || die "podman service does not answer on $SOCKET"
echo "Docker API answers on unix://$SOCKET (pid $SERVICE_PID)"

# =================================================== 3. PostgreSQL image
part "PostgreSQL image"
# The tag is a hash of everything the image is made from, so a change to the
# entrypoint or the recipe builds a new one and an unchanged one is reused.
PG_CHANGES=(
  'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  'ENV LANG=C.UTF-8'
  'ENV PGDATA=/var/lib/postgresql/data'
  'ENTRYPOINT ["docker-entrypoint.sh"]'
  'CMD ["postgres"]'
  'EXPOSE 5432'
  'STOPSIGNAL SIGINT'
)
pg_key=$({ echo "$SUITE postgresql-15 recipe-1"; printf '%s\n' "${PG_CHANGES[@]}"; cat .ci/pg-entrypoint.sh; } | sha256sum | cut -c1-12)
PG_IMAGE="$PG_REPO:15-$pg_key"
build_pg_root() {
  local root="$1"
  debootstrap_root "$root" postgresql-15
  # Debian's package creates a cluster; the entrypoint makes its own in $PGDATA.
  rm -rf "$root"/var/lib/postgresql/15 "$root"/etc/postgresql/15
  install -m 0755 .ci/pg-entrypoint.sh "$root/usr/local/bin/docker-entrypoint.sh"
  mkdir -p "$root/docker-entrypoint-initdb.d" "$root/var/lib/postgresql/data"
  chroot "$root" chown postgres:postgres /var/lib/postgresql/data
}
PG_TARBALL="$CACHE/images/dept-ci-postgres-$pg_key.tar"
ensure_image "$PG_IMAGE" "$PG_TARBALL" build_pg_root "${PG_CHANGES[@]}"
drop_old_versions "$PG_IMAGE" "$PG_TARBALL"
timeout 60 podman run --rm --network=none --entrypoint postgres "$PG_IMAGE" --version

# ======================================= 4. test suite via testcontainers
if [ "$MODE" = full ]; then
  part "test suite via testcontainers"
  suite_path="${CI_SUITE_NODE:+$CI_SUITE_NODE:}$PATH"
  step "on Node $(PATH="$suite_path" node --version): DOCKER_HOST=unix://$SOCKET TESTCONTAINERS_RYUK_DISABLED=true TEST_PG_IMAGE=$PG_IMAGE npm test"
  # Ryuk's image cannot be pulled here; the containers are removed by the
  # suite's teardown, or by this script's cleanup. /.dockerenv makes
  # testcontainers think it runs inside a container and use the bridge gateway;
  # the published ports are on the host's loopback anyway.
  suite_rc=0
  long 1500 "$RUN_DIR/suite.log" env -u DATABASE_URL \
    PATH="$suite_path" \
    DOCKER_HOST="unix://$SOCKET" \
    TESTCONTAINERS_RYUK_DISABLED=true \
    TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 \
    TEST_PG_IMAGE="$PG_IMAGE" \
    npm test -- --reporter=default --reporter=json --outputFile.json="$RUN_DIR/suite.json" || suite_rc=$?
  line=$(grep -a -o '\[tests\] database: .*' "$RUN_DIR/suite.log" | head -n 1 || true)
  case "$line" in
    *"PostgreSQL in container "*"($PG_IMAGE)"*) step "the suite ran on ${line#\[tests\] database: }" ;;
    "") die "the suite did not say which database it used (no '[tests] database:' line)" ;;
    *) die "the suite did not run through testcontainers: '$line'" ;;
  esac
  [ -s "$RUN_DIR/suite.json" ] || die "no test report (npm test exit $suite_rc)"
  [ -z "${CI_SUITE_REPORT:-}" ] || cp "$RUN_DIR/suite.json" "$CI_SUITE_REPORT"
  counts=$(node -e '
    const r = require(process.argv[1]);
    console.log(`testcontainers: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped, ${r.testResults.length} files`);
    process.exit(r.numFailedTests === 0 && r.numTotalTests > 0 && r.success ? 0 : 1);
  ' "$RUN_DIR/suite.json") || { echo "$counts"; die "test suite failed (npm test exit $suite_rc)"; }
  echo "$counts"
  [ "$suite_rc" -eq 0 ] || die "npm test exited $suite_rc"
  left=$(timeout 60 podman ps -aq --filter label=org.testcontainers=true)
  [ -z "$left" ] || echo "note: the suite left containers behind (removed on exit): $left"
fi

# ================================================== 5. Node base image
part "Node base image"
# Stands in for the Dockerfile's NODE_IMAGE (node:<version>-bookworm-slim):
# Debian minbase, a Node (CI_IMAGE_NODE, else the host's) and the host's npm
# under /usr/local, and a `node` user (uid 1000), as in the official images.
dockerfile_image=$(sed -n 's/^ARG NODE_IMAGE=//p' Dockerfile)
node_bin=$(readlink -f "${CI_IMAGE_NODE:-$(command -v node)}")
node_prefix=$(dirname "$(dirname "$node_bin")")
node_version=$("$node_bin" --version)
npm_cli=$(readlink -f "$(command -v npm)")
npm_prefix=${npm_cli%/lib/node_modules/npm/bin/npm-cli.js}
[ "$npm_prefix" != "$npm_cli" ] || die "npm is not laid out as <prefix>/lib/node_modules/npm: $npm_cli"
npm_version=$(npm --version 2>/dev/null)
case "$dockerfile_image" in
  node:"${node_version#v}"-*) step "Node $node_version stands in for $dockerfile_image" ;;
  *) step "note: Node $node_version stands in for $dockerfile_image, which is another version (set CI_IMAGE_NODE)" ;;
esac
# The host's trusted CAs (this machine's egress re-signs TLS), for npm inside the build.
ca_bundle="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
[ -s "$ca_bundle" ] || ca_bundle=""
NODE_CHANGES=(
  'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  'ENV LANG=C.UTF-8'
  "ENV NODE_VERSION=${node_version#v}"
  'CMD ["node"]'
)
[ -z "$ca_bundle" ] || NODE_CHANGES+=('ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/host-ca-bundle.crt')
node_key=$({
  echo "$SUITE node recipe-2 $node_version $npm_version"
  printf '%s\n' "${NODE_CHANGES[@]}"
  [ -z "$ca_bundle" ] || sha256sum <"$ca_bundle"
} | sha256sum | cut -c1-12)
NODE_MAJOR=${node_version#v}
NODE_MAJOR=${NODE_MAJOR%%.*}
NODE_IMAGE="$NODE_REPO:$NODE_MAJOR-$node_key"
build_node_root() {
  local root="$1" parts=()
  debootstrap_root "$root"
  chroot "$root" groupadd --gid 1000 node
  chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  step "copying Node $node_version from $node_prefix, npm $npm_version from $npm_prefix"
  install -D -m 0755 "$node_bin" "$root/usr/local/bin/node"
  if [ -d "$node_prefix/include/node" ]; then
    mkdir -p "$root/usr/local/include"
    tar -C "$node_prefix/include" -cf - node | tar -C "$root/usr/local/include" -xf -
  fi
  for p in lib/node_modules/npm lib/node_modules/corepack; do
    if [ -e "$npm_prefix/$p" ]; then parts+=("$p"); fi
  done
  tar -C "$npm_prefix" -cf - "${parts[@]}" | tar -C "$root/usr/local" -xf -
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  if [ -e "$root/usr/local/lib/node_modules/corepack/dist/corepack.js" ]; then
    ln -s ../lib/node_modules/corepack/dist/corepack.js "$root/usr/local/bin/corepack"
  fi
  if [ -n "$ca_bundle" ]; then
    install -D -m 0644 "$ca_bundle" "$root/usr/local/share/ca-certificates/host-ca-bundle.crt"
  fi
}
NODE_TARBALL="$CACHE/images/dept-ci-node-$node_key.tar"
ensure_image "$NODE_IMAGE" "$NODE_TARBALL" build_node_root "${NODE_CHANGES[@]}"
drop_old_versions "$NODE_IMAGE" "$NODE_TARBALL"
timeout 60 podman run --rm --network=none "$NODE_IMAGE" sh -c 'echo "node $(node --version), npm $(npm --version), user $(id node)"'

if [ "$MODE" = prepare ]; then
  part_done
  echo
  echo "containers.sh --prepare: OK (images $PG_IMAGE and $NODE_IMAGE ready)"
  exit 0
fi

# ============================================== 6. project image build
part "project image build + checks"
old_app_id=$(timeout 60 podman image inspect --format '{{.Id}}' "$APP_IMAGE" 2>/dev/null || true)
step "podman build --build-arg NODE_IMAGE=$NODE_IMAGE -t $APP_IMAGE ."
# docker format keeps the HEALTHCHECK (OCI image config has no field for it);
# host network for npm ci.
long 1200 "$RUN_DIR/build.log" podman build --format docker --network=host --pull=never --layers --force-rm \
  --build-arg NODE_IMAGE="$NODE_IMAGE" -t "$APP_IMAGE" -f Dockerfile . || die "podman build"
app_id=$(timeout 60 podman image inspect --format '{{.Id}}' "$APP_IMAGE")
if [ -n "$old_app_id" ] && [ "$old_app_id" != "$app_id" ]; then
  timeout 60 podman rmi "$old_app_id" >/dev/null 2>&1 || true
fi
timeout 60 podman image ls "$APP_IMAGE"

step "checks: non-root user, health check, no dev dependencies, no tests"
user=$(timeout 60 podman image inspect --format '{{.Config.User}}' "$APP_IMAGE")
uid=$(timeout 60 podman run --rm --network=none --entrypoint id "$APP_IMAGE" -u)
echo "image user: '$user', uid in a container: $uid"
case "$user:$uid" in
  :* | root:* | 0:* | *:0) die "the image runs as root" ;;
esac
hc=$(timeout 60 podman image inspect --format '{{if .Config.Healthcheck}}{{join .Config.Healthcheck.Test " "}}{{end}}' "$APP_IMAGE")
[ -n "$hc" ] || die "the image has no HEALTHCHECK"
echo "health check: $hc"
# The packages only development needs: marked "dev" in the lockfile. A devDependency that a runtime
# dependency also needs (@types/node, which exceljs's CSV writer lists among its dependencies) is not one.
dev_only=$(node -e '
  const lock = JSON.parse(require("node:fs").readFileSync("package-lock.json", "utf8")).packages;
  const top = Object.entries(lock).filter(([path, p]) => p.dev && /^node_modules\/(@[^/]+\/)?[^/]+$/.test(path));
  console.log(top.map(([path]) => path.slice("node_modules/".length)).join(","));
')
[ -n "$dev_only" ] || die "no dev-only packages found in package-lock.json"
timeout 120 podman run --rm --network=none -e DEV_ONLY="$dev_only" --entrypoint node "$APP_IMAGE" -e '
  const fs = require("node:fs");
  const bad = process.env.DEV_ONLY.split(",").filter((d) => fs.existsSync(`node_modules/${d}`));
  for (const p of ["tests", "bench", "src", "node_modules/.bin/vitest", "node_modules/.bin/tsc"]) if (fs.existsSync(p)) bad.push(p);
  if (!fs.existsSync("dist/main.js")) bad.push("(missing dist/main.js)");
  const n = fs.readdirSync("node_modules").length;
  console.log(`in ${process.cwd()}: ${fs.readdirSync(".").join(" ")}; node_modules has ${n} entries`);
  if (bad.length) { console.error("unexpected in the image: " + bad.join(", ")); process.exit(1); }
  console.log("no dev dependencies, tests or sources in the image");
'

# =========================================== 7. run the image
part "run the image on host PostgreSQL"
step "fresh database $APP_PORT_DB_NAME on $HOST_PG_URL"
timeout 60 pg_isready -d "$HOST_PG_URL" >/dev/null || die "host PostgreSQL does not answer at $HOST_PG_URL"
timeout 60 psql "$HOST_PG_URL" -qX -v ON_ERROR_STOP=1 -c "CREATE DATABASE $APP_PORT_DB_NAME" >/dev/null
FRESH_DB="$APP_PORT_DB_NAME"
app_db_url=$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString())' "$HOST_PG_URL" "$FRESH_DB")
port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
# The image's MANAGEMENT_PORT (9464) is replaced by a free one: on the host network 9464 may be taken.
management_port=$(node -e 'const s = require("node:net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
admin_password="ci-$(od -An -N9 -tx1 /dev/urandom | tr -d ' \n')"
APP_CTR="dept-ci-app-$$"
step "podman run $APP_IMAGE --network=host PORT=$port MANAGEMENT_PORT=$management_port"
timeout 120 podman run -d --name "$APP_CTR" --network=host \
  -e DATABASE_URL="$app_db_url" -e ADMIN_PASSWORD="$admin_password" -e PORT="$port" -e HOST=127.0.0.1 -e MANAGEMENT_PORT="$management_port" \
  "$APP_IMAGE" >/dev/null
base="http://127.0.0.1:$port"
ready=""
for _ in $(seq 1 120); do
  if curl -sf --max-time 2 "$base/readyz" >/dev/null; then ready=1 && break; fi
  [ "$(timeout 30 podman inspect --format '{{.State.Running}}' "$APP_CTR")" = true ] || break
  sleep 0.5
done
[ -n "$ready" ] || { timeout 30 podman logs "$APP_CTR" | tail -n 30; die "the container did not become ready"; }
echo "GET /readyz: $(curl -s --max-time 5 "$base/readyz")"
step "the image's HEALTHCHECK (podman healthcheck run)"
timeout 60 podman healthcheck run "$APP_CTR" || die "health check failed"
echo healthy
step "GET /metrics on the management port"
curl -sf --max-time 10 "http://127.0.0.1:$management_port/metrics" | grep '^http_request_duration_seconds_count' ||
  die "no request metrics on the management port"

step "POST /auth/login as admin"
login=$(curl -s --max-time 10 "$base/auth/login" -H 'content-type: application/json' \
  -d "{\"tenantId\":\"000000\",\"username\":\"admin\",\"password\":\"$admin_password\"}")
token=$(node -e 'const r = JSON.parse(process.argv[1]); if (!r.data?.access_token) process.exit(1); console.log(r.data.access_token)' "$login") ||
  die "login failed: $login"
echo "logged in (token of ${#token} characters)"
step "GET /system/dept-api/tree"
tree=$(curl -s --max-time 10 "$base/system/dept-api/tree" -H "authorization: Bearer $token")
node -e '
  const r = JSON.parse(process.argv[1]);
  if (r.code !== 200) { console.error(process.argv[1]); process.exit(1); }
  const names = (nodes) => nodes.flatMap((n) => [n.deptName ?? n.label ?? n.name ?? n.id, ...names(n.children ?? [])]);
  console.log(`code ${r.code}, departments: ${names(Array.isArray(r.data) ? r.data : [r.data]).join(", ")}`);
' "$tree" || die "department tree: $tree"

step "stop and remove the container"
timeout 60 podman stop -t 20 "$APP_CTR" >/dev/null
exit_code=$(timeout 30 podman inspect --format '{{.State.ExitCode}}' "$APP_CTR")
timeout 30 podman logs "$APP_CTR" 2>&1 | grep -q 'shutting down' || die "no graceful shutdown in the container's log"
echo "stopped: exit code $exit_code, graceful shutdown logged"
[ "$exit_code" = 0 ] || die "the container exited $exit_code"
timeout 60 podman rm -v "$APP_CTR" >/dev/null
APP_CTR=""
timeout 60 psql "$HOST_PG_URL" -qX -v ON_ERROR_STOP=1 -c "DROP DATABASE $FRESH_DB WITH (FORCE)" >/dev/null
FRESH_DB=""
echo "removed; database dropped"

# ============================================ 8. the example consumer
part "example consumer through the packages"
# docs/testing.md#the-example-consumer: both packages packed (npm pack), installed from
# the tarballs into examples/consumer alone, and its suite run on the image just built,
# through @dept-tenant/testcontainers; then the container bench's short mode (figures only).
consumer_env=(env -u DATABASE_URL PATH="$suite_path" DOCKER_HOST="unix://$SOCKET" TESTCONTAINERS_RYUK_DISABLED=true
  TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 DEPT_TENANT_IMAGE="$APP_IMAGE" TEST_PG_IMAGE="$PG_IMAGE")
step "on Node $(PATH="$suite_path" node --version): DEPT_TENANT_IMAGE=$APP_IMAGE bash examples/consumer/run.sh"
long 900 "$RUN_DIR/consumer.log" "${consumer_env[@]}" bash examples/consumer/run.sh --reporter=default ||
  die "the example consumer's suite failed"
step "npm run bench -- container (BENCH_SHORT=1)"
long 600 "$RUN_DIR/container-bench.log" "${consumer_env[@]}" BENCH_SHORT=1 npm run bench -- container ||
  die "the container bench failed"

part_done
echo
echo "containers.sh: OK ($counts; image $APP_IMAGE built from $NODE_IMAGE, started, logged into, stopped; the example consumer green)"
