#!/usr/bin/env bash
# A Citus cluster on loopback from the Citus extension installed on this
# machine (docs/scale-out.md#a-cluster-to-try-and-test-on): a coordinator and
# WORKERS workers, each a PostgreSQL 15 of its own, for the suite's Citus pass
# (docs/testing.md) and the citus bench mode. It starts what is installed; it
# builds and installs nothing.
#
#   .ci/citus.sh installed          exit 0 when Citus is installed for PostgreSQL 15
#   .ci/citus.sh start DIR          initdb and start the nodes, join the workers;
#                                   prints the coordinator's URL (database `test`)
#   .ci/citus.sh add-worker DIR     starts one more worker (not yet joined: the
#                                   caller joins it, e.g. with citus_add_node); prints its port
#   .ci/citus.sh node DIR PORT      starts one node of its own in DIR on PORT (a worker
#                                   a test adds to its database); `stop DIR` stops it
#   .ci/citus.sh stop DIR           stops every node by its PID
#
# PORT (9700) is the coordinator's port, the workers' follow it. The nodes run
# as user postgres with its own HOME: Citus opens SSL connections between the
# nodes, and libpq looks for client certificates under HOME. Debian's 15.20
# names the libraries allowed as logical decoding output plugins
# (output_plugin_libraries): Citus moves and isolates shards through its own
# plugins, so citus is added there.
set -euo pipefail

PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
PORT="${PORT:-9700}"
WORKERS="${WORKERS:-2}"

usage() {
  echo "usage: $0 installed | start DIR | add-worker DIR | node DIR PORT | stop DIR" >&2
  exit 2
}

installed() { [ -f "$("$PG_BIN/pg_config" --pkglibdir)/citus.so" ] && [ -f "$("$PG_BIN/pg_config" --sharedir)/extension/citus.control" ]; }

as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then
    su postgres -s /bin/bash -c "HOME=$(getent passwd postgres | cut -d: -f6) $(printf '%q ' "$@")"
  else
    "$@"
  fi
}

psql_at() {
  local port="$1"
  shift
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"
}

# Makes and starts one node in DIR/node-PORT.
start_node() {
  local dir="$1" port="$2" data="$1/node-$2"
  as_postgres "$PG_BIN/initdb" -D "$data" -U postgres --auth=trust --no-sync -E UTF8 >/dev/null
  cat >>"$data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
shared_preload_libraries = 'citus'
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
max_connections = 300
output_plugin_libraries = 'pgoutput, test_decoding, citus'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 64MB
# Loopback only: the nodes talk without TLS, as the service talks to its database here (Citus turns TLS
# on between nodes by itself; it cost a by-id read 15% of its rate on this machine). A cluster across
# machines keeps it (docs/scale-out.md).
citus.node_conninfo = 'sslmode=disable'
EOF
  as_postgres "$PG_BIN/pg_ctl" -D "$data" -l "$data/log" -w -t 60 start >/dev/null
  echo "$port" >>"$dir/ports"
  psql_at "$port" -d postgres -c 'CREATE DATABASE test' -c '\c test' -c 'CREATE EXTENSION citus'
}

start() {
  local dir="$1"
  installed || { echo "Citus is not installed for PostgreSQL 15 ($PG_BIN)" >&2; exit 1; }
  [ ! -e "$dir/ports" ] || { echo "$dir already holds a cluster" >&2; exit 1; }
  mkdir -p "$dir"
  chown postgres "$dir" 2>/dev/null || true
  local port
  for i in $(seq 0 "$WORKERS"); do start_node "$dir" $((PORT + i)); done
  psql_at "$PORT" -d test -c "SELECT citus_set_coordinator_host('127.0.0.1', $PORT)" >/dev/null
  for i in $(seq 1 "$WORKERS"); do
    psql_at "$PORT" -d test -c "SELECT citus_add_node('127.0.0.1', $((PORT + i)))" >/dev/null
  done
  echo "postgres://postgres@127.0.0.1:$PORT/test"
}

add_worker() {
  local dir="$1" last
  last=$(sort -n "$dir/ports" | tail -n 1)
  start_node "$dir" $((last + 1))
  echo $((last + 1))
}

stop() {
  local dir="$1"
  [ -e "$dir/ports" ] || return 0
  for port in $(cat "$dir/ports"); do
    local pidfile="$dir/node-$port/postmaster.pid"
    [ -s "$pidfile" ] || continue
    local pid
    pid=$(head -n 1 "$pidfile")
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  done
  rm -f "$dir/ports"
}

case "${1:-}" in
  installed) installed ;;
  node)
    [ $# -eq 3 ] || usage
    mkdir -p "$2"
    chown postgres "$2" 2>/dev/null || true
    start_node "$2" "$3"
    echo "$3"
    ;;
  start) [ $# -eq 2 ] || usage; start "$2" ;;
  add-worker) [ $# -eq 2 ] || usage; add_worker "$2" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  *) usage ;;
esac
