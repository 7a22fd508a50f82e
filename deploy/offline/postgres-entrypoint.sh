#!/bin/bash
# Entrypoint of the offline PostgreSQL stand-in, doing what the official postgres image does
# for docker-compose.yml: on an empty PGDATA, initdb with POSTGRES_USER/POSTGRES_PASSWORD
# (password auth over TCP), create POSTGRES_DB, run /docker-entrypoint-initdb.d/*.sh and
# *.sql against a socket-only temporary server, then start the server on every interface.
# An initialised PGDATA is started as it is.
set -euo pipefail

if [[ ${1:-} != postgres ]]; then exec "$@"; fi
shift

if [[ $(id -u) == 0 ]]; then
  install -d -m 0700 -o postgres -g postgres "$PGDATA"
  install -d -m 2775 -o postgres -g postgres /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" postgres "$@"
fi

if [[ ! -s $PGDATA/PG_VERSION ]]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
  export POSTGRES_USER="${POSTGRES_USER:-postgres}"
  export POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
  echo "postgres-entrypoint: initialising $PGDATA" >&2
  initdb -D "$PGDATA" --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") \
    -E UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >&2
  printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  printf "listen_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -c unix_socket_directories=/var/run/postgresql" start >&2
  if [[ $POSTGRES_DB != postgres ]]; then
    psql --no-psqlrc -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
      --set=db="$POSTGRES_DB" <<<'CREATE DATABASE :"db";' >&2
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh)
        echo "postgres-entrypoint: running $f" >&2
        if [[ -x $f ]]; then "$f"; else . "$f"; fi
        ;;
      *.sql)
        echo "postgres-entrypoint: running $f" >&2
        psql --no-psqlrc -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -f "$f" >&2
        ;;
      *) [[ -e $f ]] && echo "postgres-entrypoint: ignoring $f" >&2 ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop >&2
  echo "postgres-entrypoint: init done" >&2
fi

exec postgres -D "$PGDATA" "$@"
