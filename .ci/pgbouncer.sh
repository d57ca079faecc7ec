#!/usr/bin/env bash
# A PgBouncer in transaction mode in front of the local PostgreSQL, for running
# the suite through it (docs/testing.md#through-pgbouncer):
#
#   .ci/pgbouncer.sh start DIR    starts it on a free loopback port; prints its URL
#                                 (postgres://postgres@127.0.0.1:PORT/test); DIR keeps
#                                 the config, log, port and PID
#   .ci/pgbouncer.sh stats DIR    the transactions and queries it served (SHOW STATS,
#                                 summed over its databases)
#   .ci/pgbouncer.sh stop DIR     stops it by its PID
#
# PG_HOST and PG_PORT (127.0.0.1, 5432) name the server. The settings are the
# ones docs/operations.md#behind-a-pooler asks for, made tight on purpose:
# three server connections per database, so the clients of one test file
# really take turns on them and anything that leaned on session state would
# show. No ignore_startup_parameters: the service must not need it. A `*`
# entry routes every database name to the server, so the databases the test
# files clone from the template are reachable under their own names.
set -euo pipefail

PGBOUNCER="${PGBOUNCER:-$(command -v pgbouncer || echo /usr/sbin/pgbouncer)}"
PG_HOST="${PG_HOST:-127.0.0.1}"
PG_PORT="${PG_PORT:-5432}"
# POOL_SIZE: server connections per database; 3 for the suite (above), more for
# the benchmark, whose 50 clients would otherwise measure the queue.
POOL_SIZE="${POOL_SIZE:-3}"
# MAX_PREPARED_STATEMENTS: set, PgBouncer (1.21 and later only) keeps the
# clients' named prepared statements across its server connections, so the
# service can run with DB_PREPARE=true behind it (docs/operations.md#behind-a-pooler).
MAX_PREPARED_STATEMENTS="${MAX_PREPARED_STATEMENTS:-}"

usage() {
  echo "usage: $0 start|stats|stop DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
cmd="$1" dir="$2"

running() { [ -s "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }

start() {
  [ -x "$PGBOUNCER" ] || { echo "pgbouncer not found (apt-get install -y pgbouncer)" >&2; exit 1; }
  if running; then
    echo "already running (pid $(cat "$dir/pid"))" >&2
    exit 1
  fi
  mkdir -p "$dir"
  # PgBouncer refuses to run as root: it runs as postgres, which must read the
  # config and write the log here.
  local as=()
  if [ "$(id -u)" -eq 0 ]; then
    as=(-u postgres)
    chown postgres "$dir"
  fi
  echo '"postgres" ""' >"$dir/userlist.txt"
  # A port another process takes between the pick and the bind makes PgBouncer
  # exit at once: then another port is tried.
  for _ in $(seq 1 20); do
    local port=$((20000 + RANDOM % 20000))
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=$PG_HOST port=$PG_PORT

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = $POOL_SIZE
max_client_conn = 1000
query_wait_timeout = 30
logfile = $dir/pgbouncer.log
EOF
    [ -z "$MAX_PREPARED_STATEMENTS" ] || echo "max_prepared_statements = $MAX_PREPARED_STATEMENTS" >>"$dir/pgbouncer.ini"
    chmod a+r "$dir/pgbouncer.ini" "$dir/userlist.txt"
    : >"$dir/pgbouncer.log"
    [ "$(id -u)" -ne 0 ] || chown postgres "$dir/pgbouncer.log"
    setsid "$PGBOUNCER" "${as[@]}" "$dir/pgbouncer.ini" >>"$dir/pgbouncer.out" 2>&1 </dev/null &
    local pid=$!
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "$pid" >"$dir/pid"
        echo "$port" >"$dir/port"
        echo "postgres://postgres@127.0.0.1:$port/test" | tee "$dir/url"
        return 0
      fi
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  echo "pgbouncer did not start; its log:" >&2
  cat "$dir/pgbouncer.log" "$dir/pgbouncer.out" >&2 2>/dev/null || true
  exit 1
}

stats() {
  running || { echo "not running" >&2; exit 1; }
  # Columns 1-3: database, total_xact_count, total_query_count. The admin
  # console's own database does not count.
  psql -h 127.0.0.1 -p "$(cat "$dir/port")" -U postgres -d pgbouncer -AtF ' ' -c 'SHOW STATS' |
    awk '$1 != "pgbouncer" { n++; x += $2; q += $3 } END { printf "pgbouncer served %d transactions, %d queries, in %d databases\n", x, q, n }'
}

stop() {
  if ! running; then
    rm -f "$dir/pid"
    return 0
  fi
  local pid
  pid=$(cat "$dir/pid")
  kill -TERM "$pid"
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  rm -f "$dir/pid"
}

case "$cmd" in
  start) start ;;
  stats) stats ;;
  stop) stop ;;
  *) usage ;;
esac
