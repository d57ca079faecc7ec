#!/usr/bin/env bash
# Entrypoint of the PostgreSQL image .ci/containers.sh builds (Debian bookworm's
# postgresql-15). It follows the official postgres image's contract, the part
# @testcontainers/postgresql and most tools rely on:
#   POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust),
#   POSTGRES_USER (default postgres), POSTGRES_DB (default $POSTGRES_USER),
#   POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD (default scram-sha-256),
#   the *_FILE variants, PGDATA, /docker-entrypoint-initdb.d/*.{sh,sql,sql.gz}.
# On first start it runs initdb, starts a socket-only server to create the
# database and run the init scripts, stops it, then execs the real server, so
# "database system is ready to accept connections" is printed twice, as by the
# official image. The server listens on 5432 on all addresses; connections
# from outside the container need the password.
set -Eeo pipefail

file_env() {
  local var="$1" def="${2:-}" fileVar="${1}_FILE"
  if [ -n "${!var:-}" ] && [ -n "${!fileVar:-}" ]; then
    echo >&2 "error: both $var and $fileVar are set (but are exclusive)"
    exit 1
  fi
  local val="$def"
  if [ -n "${!var:-}" ]; then
    val="${!var}"
  elif [ -n "${!fileVar:-}" ]; then
    val="$(<"${!fileVar}")"
  fi
  export "$var"="$val"
  unset "$fileVar"
}

# "docker run image -c fsync=off" means postgres with those options.
if [ "${1:0:1}" = '-' ]; then
  set -- postgres "$@"
fi

if [ "$1" = 'postgres' ] && [ "$(id -u)" = '0' ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  chmod 3775 /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

if [ "$1" = 'postgres' ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  file_env POSTGRES_PASSWORD
  file_env POSTGRES_USER postgres
  file_env POSTGRES_DB "$POSTGRES_USER"
  file_env POSTGRES_INITDB_ARGS
  : "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
  if [ -z "$POSTGRES_PASSWORD" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != 'trust' ]; then
    cat >&2 <<'EOM'
Error: Database is uninitialized and superuser password is not specified.
       You must specify POSTGRES_PASSWORD to a non-empty value for the
       superuser. For example, "-e POSTGRES_PASSWORD=password" on "docker run".
       (or POSTGRES_HOST_AUTH_METHOD=trust to allow all connections without a password)
EOM
    exit 1
  fi

  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a word list, as in the official image
  if [ -n "$POSTGRES_PASSWORD" ]; then
    initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") $POSTGRES_INITDB_ARGS
  else
    initdb --username="$POSTGRES_USER" $POSTGRES_INITDB_ARGS
  fi

  {
    echo
    echo "# added by docker-entrypoint.sh"
    echo "listen_addresses = '*'"
    echo "port = 5432"
  } >>"$PGDATA/postgresql.conf"
  {
    echo
    echo "# added by docker-entrypoint.sh: connections from outside the container"
    echo "host all all all $POSTGRES_HOST_AUTH_METHOD"
  } >>"$PGDATA/pg_hba.conf"

  # Temporary server on the Unix socket only, as the official image does.
  PGUSER="$POSTGRES_USER" PGPASSWORD="$POSTGRES_PASSWORD" \
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start

  psql_cmd=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
  if [ "$POSTGRES_DB" != 'postgres' ]; then
    printf 'CREATE DATABASE :"db" ;\n' | "${psql_cmd[@]}" --dbname postgres --set db="$POSTGRES_DB"
  fi
  psql_cmd+=(--dbname "$POSTGRES_DB")

  shopt -s nullglob
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh)
        # shellcheck disable=SC1090
        if [ -x "$f" ]; then echo "$0: running $f"; "$f"; else echo "$0: sourcing $f"; . "$f"; fi ;;
      *.sql) echo "$0: running $f"; "${psql_cmd[@]}" -f "$f" ;;
      *.sql.gz) echo "$0: running $f"; gunzip -c "$f" | "${psql_cmd[@]}" ;;
      *) echo "$0: ignoring $f" ;;
    esac
  done

  pg_ctl -D "$PGDATA" -m fast -w stop
  echo
  echo 'PostgreSQL init process complete; ready for start up.'
  echo
fi

exec "$@"
