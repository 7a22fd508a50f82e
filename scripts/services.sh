#!/usr/bin/env bash
# services.sh - run the real backing services of the content pipeline on this
# machine, without Docker: PostgreSQL, Redis, Elasticsearch and Alertmanager, all on loopback.
#
#   scripts/services.sh up       install what is missing, start what is not running, wait
#   scripts/services.sh down     stop all three
#   scripts/services.sh status   one line per service; exit 1 if any does not answer
#   scripts/services.sh env      eval-able `export` lines: eval "$(scripts/services.sh env)"
#   scripts/services.sh logs [postgres|redis|elasticsearch]   last lines of the logs
#
# `up` and `down` need root (Debian 12): packages come from apt, PostgreSQL runs
# as the Debian `postgres` user and Elasticsearch as a system user
# `elasticsearch` (both refuse to run as root). `status`, `env` and `logs` work
# for any user. Alertmanager is Debian's `prometheus-alertmanager` package (the release
# Debian 12 pins, 0.25; apt checks the package's signature and checksum), installed with
# RUNLEVEL=1 so the package starts no daemon of its own; it runs as root with
# deploy/alertmanager/alertmanager.yml, its silences under $NC_STATE_DIR/alertmanager, and
# `env` prints ALERTMANAGER_URL. Everything the script prints goes to stderr, except the output
# of `env`, so `eval "$(scripts/services.sh env)"` stays clean.
#
# Settings (environment):
#   NC_STATE_DIR     state: data, installs, logs, pid files  (/var/lib/north-cloud)
#   NC_CACHE_DIR     download cache                          ($HOME/.cache/north-cloud)
#   NC_PG_PORT       PostgreSQL port                         (5432)
#   NC_REDIS_PORT    Redis port                              (6379)
#   NC_ES_PORT       Elasticsearch HTTP port                 (9200)
#   NC_ALERTMANAGER_PORT  Alertmanager HTTP port             (9093; deploy/prometheus/
#                    prometheus.native.yml sends the alerts to 9093: change both together)
#   NC_ES_VERSION    Elasticsearch version                   (8.19.21)
#   NC_ES_HEAP       Elasticsearch heap, e.g. 2g             (1g)
#   NC_ES_JAVA_HOME  JDK for Elasticsearch                   (a JDK 17 under /usr/lib/jvm)
#   NC_WAIT_TIMEOUT  seconds to wait for each service        (120)
#
# Ports given to `up` are remembered in the state dir, so `env`, `status` and
# `down` in another shell use the ports the services really run on.
#
# Clusters (scale-out tests), selected per command by these settings; the
# single-node services above keep running untouched beside them:
#   NC_ES_NODES                   Elasticsearch nodes; 2-9 runs a cluster of that
#                                 many master-eligible data nodes instead of
#                                 the single node                  (1)
#   NC_ES_CLUSTER_PORT            HTTP port of cluster node 1; node i uses
#                                 NC_ES_CLUSTER_PORT+i-1           (9211)
#   NC_ES_CLUSTER_TRANSPORT_PORT  transport port of node 1, likewise (9311)
#   NC_ES_CLUSTER_HEAP            heap of each cluster node        (512m)
#   NC_ES_CLUSTER_JAVA_OPTS       more JVM options of each cluster node, e.g.
#                                 -XX:TieredStopAtLevel=1 (starts faster, runs
#                                 slower: for tests, not measurements) (none)
#   NC_REDIS_CLUSTER              1 runs a Redis Cluster of 3 masters, each
#                                 with a replica, instead of the single Redis (0)
#   NC_REDIS_CLUSTER_PORT         port of Redis Cluster node 1 of 6; node i uses
#                                 NC_REDIS_CLUSTER_PORT+i-1        (7101)
#   NC_REDIS_CLUSTER_NODE_TIMEOUT cluster-node-timeout in ms: how long a master
#                                 may be silent before its replica takes over (5000)
#
#   NC_ES_NODES=3 NC_REDIS_CLUSTER=1 scripts/services.sh up     start Postgres and both clusters
#   eval "$(NC_ES_NODES=3 NC_REDIS_CLUSTER=1 scripts/services.sh env)"
#   scripts/services.sh down-clusters                           stop the clusters only
#
# Redis runs with the ACL users of deploy/redis/users.sh (docs/roles.md, "Redis users"), their
# passwords generated once into $NC_STATE_DIR/redis_passwords: `env` prints REDIS_URL as user
# admin (the tests run admin commands) and NC_REDIS_{PUBLISHER,DASHBOARD,SUBSCRIBER}_URL, the
# role users scripts/run.sh gives the services. The Redis Cluster's nodes load the same users.
#
# In cluster mode `env` prints ELASTICSEARCH_URL (node 1: Elasticsearch routes
# every request to the node holding the shard), NC_ES_CLUSTER_URLS (every
# node, comma-separated, as ELASTICSEARCH_URL also accepts) and
# REDIS_URL=redis+cluster://... (a seed node; the client finds the rest), and
# the selecting settings themselves, so tests know which mode they run in.

set -euo pipefail

readonly STATE_DIR="${NC_STATE_DIR:-/var/lib/north-cloud}"
readonly CACHE_DIR="${NC_CACHE_DIR:-${HOME:-/root}/.cache/north-cloud}"
readonly ES_VERSION="${NC_ES_VERSION:-8.19.21}"
readonly ES_HEAP="${NC_ES_HEAP:-1g}"
readonly WAIT_TIMEOUT="${NC_WAIT_TIMEOUT:-120}"
readonly PORTS_FILE="$STATE_DIR/ports.env"

readonly ES_NODES="${NC_ES_NODES:-1}"
readonly ES_CLUSTER_PORT="${NC_ES_CLUSTER_PORT:-9211}"
readonly ES_CLUSTER_TRANSPORT_PORT="${NC_ES_CLUSTER_TRANSPORT_PORT:-9311}"
readonly ES_CLUSTER_HEAP="${NC_ES_CLUSTER_HEAP:-512m}"
readonly ES_CLUSTER_JAVA_OPTS="${NC_ES_CLUSTER_JAVA_OPTS:-}"
readonly REDIS_CLUSTER="${NC_REDIS_CLUSTER:-0}"
readonly REDIS_CLUSTER_PORT="${NC_REDIS_CLUSTER_PORT:-7101}"
readonly REDIS_CLUSTER_NODE_TIMEOUT="${NC_REDIS_CLUSTER_NODE_TIMEOUT:-5000}"
readonly REDIS_CLUSTER_NODES=6 # 3 masters, each with one replica

# Port precedence: explicit NC_*_PORT, else what the last `up` used, else default.
saved_port() { # saved_port NAME -> value from ports.env or empty
  if [[ -r $PORTS_FILE ]]; then sed -n "s/^$1=\([0-9]*\)$/\1/p" "$PORTS_FILE"; fi
}
_saved_pg="$(saved_port NC_PG_PORT)"
_saved_redis="$(saved_port NC_REDIS_PORT)"
_saved_es="$(saved_port NC_ES_PORT)"
_saved_am="$(saved_port NC_ALERTMANAGER_PORT)"
readonly PG_PORT="${NC_PG_PORT:-${_saved_pg:-5432}}"
readonly REDIS_PORT="${NC_REDIS_PORT:-${_saved_redis:-6379}}"
readonly ES_PORT="${NC_ES_PORT:-${_saved_es:-9200}}"
readonly AM_PORT="${NC_ALERTMANAGER_PORT:-${_saved_am:-9093}}"

readonly LOG_DIR="$STATE_DIR/logs"
readonly RUN_DIR="$STATE_DIR/run"
readonly JWT_FILE="$STATE_DIR/jwt_secret"

readonly PG_DATA="$STATE_DIR/postgres/data"
readonly PG_SOCK="$STATE_DIR/postgres/run" # unix socket directory
readonly PG_LOG="$LOG_DIR/postgres.log"

readonly REDIS_DIR="$STATE_DIR/redis"
readonly REDIS_PID="$RUN_DIR/redis.pid"
readonly REDIS_LOG="$LOG_DIR/redis.log"
# Passwords of the Redis ACL users (admin, publisher, dashboard, subscriber), one NAME=value a
# line, generated once like the JWT secret; the ACL file of deploy/redis/users.sh holds their
# SHA-256 only. Delete a line and run `up` to give that user a new password.
readonly REDIS_PASSWORDS="$STATE_DIR/redis_passwords"
readonly REDIS_ACL="$REDIS_DIR/users.acl"
readonly REDIS_USERS=(admin publisher dashboard subscriber)
REDIS_USERS_SH="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/deploy/redis/users.sh"
readonly REDIS_USERS_SH

readonly ES_USER=elasticsearch
readonly ES_BASE="$STATE_DIR/elasticsearch" # owned by $ES_USER
readonly ES_HOME="$ES_BASE/elasticsearch-$ES_VERSION"
readonly ES_DATA="$ES_BASE/data-$ES_VERSION" # per version: data of a newer ES cannot be read by an older one
readonly ES_PID="$ES_BASE/elasticsearch.pid"
readonly ES_LOG_DIR="$LOG_DIR/elasticsearch" # owned by $ES_USER
readonly ES_LOG="$ES_LOG_DIR/north-cloud.log" # <cluster.name>.log
readonly ES_START_LOG="$LOG_DIR/elasticsearch-start.log"
readonly ES_URL_BASE="https://repo1.maven.org/maven2/org/elasticsearch/distribution/integ-test-zip/elasticsearch"
readonly ES_ZIP="$CACHE_DIR/elasticsearch-$ES_VERSION.zip"
readonly ES_ZIP_URL="$ES_URL_BASE/$ES_VERSION/elasticsearch-$ES_VERSION.zip"

readonly AM_BIN=/usr/bin/prometheus-alertmanager # Debian's name of the alertmanager binary
readonly AM_DIR="$STATE_DIR/alertmanager"        # its silences and notification log
readonly AM_PID="$RUN_DIR/alertmanager.pid"
readonly AM_LOG="$LOG_DIR/alertmanager.log"
AM_CONFIG="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/deploy/alertmanager/alertmanager.yml"
readonly AM_CONFIG

readonly DATABASES=(classifier publisher index_manager) # role name = db name = password

# ---------------------------------------------------------------- helpers ---

log() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'services.sh: warning: %s\n' "$*" >&2; }
die() {
  printf 'services.sh: error: %s\n' "$*" >&2
  exit 1
}

need_root() {
  [[ $(id -u) -eq 0 ]] || die "'$1' must run as root (it installs packages and switches to the postgres/$ES_USER users); try: sudo $0 $1"
}

# port_open PORT: something accepts TCP connections on 127.0.0.1:PORT.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pid_alive PIDFILE [CMDLINE-SUBSTRING]: the process in PIDFILE runs (and its
# command line contains the substring, which guards against recycled pids).
pid_alive() {
  local pid
  [[ -r $1 ]] || return 1
  pid="$(head -n1 "$1" 2>/dev/null | tr -dc '0-9')"
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
  [[ -z ${2:-} ]] || tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2"
}

# fail_with_log SERVICE LOGFILE MESSAGE: print the log tail and exit.
fail_with_log() {
  printf 'services.sh: error: %s: %s\n' "$1" "$3" >&2
  if [[ -r $2 ]]; then
    printf -- '--- last 20 lines of %s ---\n' "$2" >&2
    tail -n 20 "$2" >&2
    printf -- '---\n' >&2
  else
    printf 'services.sh: (no log at %s)\n' "$2" >&2
  fi
  exit 1
}

# wait_until SERVICE LOGFILE CHECK-COMMAND...: retry the check once a second
# until it succeeds or NC_WAIT_TIMEOUT passes.
wait_until() {
  local service=$1 logfile=$2
  shift 2
  wait_until_or "$service" "$logfile" "did not answer within ${WAIT_TIMEOUT}s (NC_WAIT_TIMEOUT)" "$@"
}

# wait_until_or SERVICE LOGFILE MESSAGE CHECK-COMMAND...: wait_until, failing
# with MESSAGE.
wait_until_or() {
  local service=$1 logfile=$2 message=$3 deadline=$((SECONDS + WAIT_TIMEOUT))
  shift 3
  until "$@"; do
    ((SECONDS < deadline)) || fail_with_log "$service" "$logfile" "$message"
    sleep 1
  done
}

# ------------------------------------------------------------ packages ------

APT_UPDATED=0
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  # Wait for a concurrent apt/dpkg (e.g. a background install) instead of failing.
  local lock=(-o DPkg::Lock::Timeout=600)
  if ((APT_UPDATED == 0)); then
    log "apt-get update"
    apt-get "${lock[@]}" -q update >&2 || die "apt-get update failed"
    APT_UPDATED=1
  fi
  log "apt-get install $*"
  apt-get "${lock[@]}" -q -y install --no-install-recommends "$@" >&2 || die "apt-get install $* failed"
}

# Newest PostgreSQL server installed by Debian, e.g. /usr/lib/postgresql/15/bin.
# An existing data dir pins the major version it was created with.
pg_bin_dir() {
  local v
  if [[ -r $PG_DATA/PG_VERSION ]]; then
    v="$(cat "$PG_DATA/PG_VERSION")"
    [[ -x /usr/lib/postgresql/$v/bin/pg_ctl ]] && { echo "/usr/lib/postgresql/$v/bin"; return 0; }
  fi
  find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -name pg_ctl -path '*/bin/*' 2>/dev/null |
    sort -V | tail -n1 | xargs -r dirname
}

# A JDK 17 for Elasticsearch (the integ-test-zip has no bundled JDK).
java_home() {
  local d
  if [[ -n ${NC_ES_JAVA_HOME:-} ]]; then echo "$NC_ES_JAVA_HOME"; return 0; fi
  for d in /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/*-17-*; do
    [[ -x $d/bin/java ]] && { echo "$d"; return 0; }
  done
  return 1
}

ensure_packages() {
  local missing=()
  [[ -n $(pg_bin_dir) ]] || missing+=(postgresql)
  command -v psql >/dev/null && command -v pg_isready >/dev/null || missing+=(postgresql-client)
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v redis-cli >/dev/null || missing+=(redis-tools)
  java_home >/dev/null || missing+=(openjdk-17-jre-headless)
  command -v unzip >/dev/null || missing+=(unzip)
  command -v curl >/dev/null || missing+=(curl ca-certificates)
  command -v openssl >/dev/null || missing+=(openssl)
  ((${#missing[@]} == 0)) || apt_install "${missing[@]}"
  # RUNLEVEL=1: the package's maintainer scripts start no Debian daemon on :9093.
  [[ -x $AM_BIN ]] || RUNLEVEL=1 apt_install prometheus-alertmanager
  [[ -n $(pg_bin_dir) ]] || die "no PostgreSQL server found under /usr/lib/postgresql after installing"
  java_home >/dev/null || die "no JDK 17 found under /usr/lib/jvm (set NC_ES_JAVA_HOME)"
  id -u postgres >/dev/null 2>&1 || die "user 'postgres' is missing (the postgresql package creates it)"
  if ! id -u "$ES_USER" >/dev/null 2>&1; then
    log "creating system user $ES_USER"
    useradd --system --user-group --no-create-home --home-dir "$ES_BASE" --shell /usr/sbin/nologin "$ES_USER"
  fi
}

# State dir layout; world-readable (not the data dirs) so non-root users can
# read logs, the socket and the JWT secret.
ensure_state_dirs() {
  install -d -m 0755 "$STATE_DIR" "$LOG_DIR" "$RUN_DIR" "$REDIS_DIR" "$STATE_DIR/postgres" "$AM_DIR"
  install -d -m 0755 -o postgres -g postgres "$PG_SOCK"
  install -d -m 0755 -o "$ES_USER" -g "$ES_USER" "$ES_BASE" "$ES_LOG_DIR"
  if [[ ! -s $JWT_FILE ]]; then
    # 24 random bytes = 48 hex chars; created once, reused by every `env`.
    (umask 022 && openssl rand -hex 24 >"$JWT_FILE.tmp" && mv "$JWT_FILE.tmp" "$JWT_FILE")
  fi
  redis_ensure_passwords
}

# One up/down at a time. The daemons are started with fd 8/9 closed, or they
# would inherit the lock and hold it forever.
lock_state() {
  exec 9>"$STATE_DIR/.lock"
  flock -w 600 9 || die "another 'services.sh up/down' holds $STATE_DIR/.lock"
}

save_ports() {
  printf 'NC_PG_PORT=%s\nNC_REDIS_PORT=%s\nNC_ES_PORT=%s\nNC_ALERTMANAGER_PORT=%s\n' \
    "$PG_PORT" "$REDIS_PORT" "$ES_PORT" "$AM_PORT" >"$PORTS_FILE.tmp"
  mv "$PORTS_FILE.tmp" "$PORTS_FILE"
}

# ---------------------------------------------------------- PostgreSQL ------

as_postgres() { (cd / && runuser -u postgres -- "$@"); }

pg_url() { # pg_url USER DB
  printf 'postgres://%s:%s@127.0.0.1:%s/%s?sslmode=disable' "$1" "$1" "$PG_PORT" "$2"
}

pg_running() { pid_alive "$PG_DATA/postmaster.pid" postgres; }

# Port the running server was started with (line 4 of postmaster.pid).
pg_running_port() { sed -n 4p "$PG_DATA/postmaster.pid" 2>/dev/null; }

pg_init() {
  [[ -s $PG_DATA/PG_VERSION ]] && return 0
  local bin
  bin="$(pg_bin_dir)"
  log "postgres: initdb $PG_DATA"
  install -d -m 0700 -o postgres -g postgres "$PG_DATA"
  # Local socket: trust (dev machine); TCP: scram-sha-256 passwords.
  as_postgres "$bin/initdb" -D "$PG_DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 >"$LOG_DIR/initdb.log" 2>&1 ||
    fail_with_log postgres "$LOG_DIR/initdb.log" "initdb failed"
  echo "include_if_exists = 'north-cloud.conf'" >>"$PG_DATA/postgresql.conf"
}

# The Debian package may have created and started its own cluster (15/main on
# 5432); it is not ours - stop it when it holds our port.
pg_stop_debian_cluster() {
  command -v pg_lsclusters >/dev/null || return 0
  local ver name port status
  while read -r ver name port status _; do
    if [[ $port == "$PG_PORT" && $status == online* ]]; then
      log "postgres: stopping Debian's cluster $ver/$name, it holds port $PG_PORT (start it again with: pg_ctlcluster $ver $name start)"
      pg_ctlcluster "$ver" "$name" stop || die "could not stop PostgreSQL cluster $ver/$name on port $PG_PORT"
    fi
  done < <(pg_lsclusters -h 2>/dev/null)
}

pg_start() {
  local bin
  bin="$(pg_bin_dir)"
  pg_stop_debian_cluster
  port_open "$PG_PORT" && die "postgres: port 127.0.0.1:$PG_PORT is in use by another program (set NC_PG_PORT)"
  # Rewritten on every start so NC_PG_PORT changes apply. fsync and
  # synchronous_commit are off: this is a throwaway dev/test cluster, speed
  # matters more than surviving a power loss.
  cat >"$PG_DATA/north-cloud.conf" <<EOF
# written by scripts/services.sh - edits are overwritten
listen_addresses = '127.0.0.1'
port = $PG_PORT
unix_socket_directories = '$PG_SOCK'
max_connections = 300
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  chown postgres:postgres "$PG_DATA/north-cloud.conf"
  touch "$PG_LOG" && chown postgres:postgres "$PG_LOG"
  log "postgres: starting on 127.0.0.1:$PG_PORT"
  # setsid: every daemon gets a session of its own, so that killing the
  # shell or job that ran `up` (and its process group) does not take the
  # services down with it.
  as_postgres setsid -w "$bin/pg_ctl" -D "$PG_DATA" -l "$PG_LOG" -w -t "$WAIT_TIMEOUT" start >/dev/null 2>&1 8>&- 9>&- ||
    fail_with_log postgres "$PG_LOG" "pg_ctl start failed"
}

pg_stop() {
  pg_running || return 0
  log "postgres: stopping"
  as_postgres "$(pg_bin_dir)/pg_ctl" -D "$PG_DATA" -m fast -w stop >/dev/null
}

pg_ready() { pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -t 2; }

# Roles and databases, idempotently, over the local socket as superuser.
pg_provision() {
  log "postgres: ensuring roles and databases ${DATABASES[*]}"
  local sql="ALTER ROLE postgres PASSWORD 'postgres';" db
  for db in "${DATABASES[@]}"; do
    sql+="
SELECT 'CREATE ROLE $db' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$db') \\gexec
ALTER ROLE $db WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '$db';
SELECT 'CREATE DATABASE $db OWNER $db' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = '$db') \\gexec"
  done
  psql -X -q -v ON_ERROR_STOP=1 -h "$PG_SOCK" -p "$PG_PORT" -U postgres -d postgres <<<"$sql" >/dev/null ||
    die "postgres: creating roles/databases failed"
}

# Every URL that `env` prints connects (passwords, owners, TCP auth).
pg_urls_work() {
  local url
  for url in "$(pg_url postgres postgres)" "$(pg_url classifier classifier)" \
    "$(pg_url classifier publisher)" "$(pg_url publisher publisher)" "$(pg_url index_manager index_manager)"; do
    psql -X -q -tA -c 'select 1' "$url" >/dev/null 2>&1 || return 1
  done
}

pg_up() {
  pg_init
  if pg_running && [[ $(pg_running_port) != "$PG_PORT" ]]; then
    port_open "$PG_PORT" && die "postgres: port 127.0.0.1:$PG_PORT is in use by another program (set NC_PG_PORT)"
    log "postgres: running on port $(pg_running_port), restarting on $PG_PORT"
    pg_stop
  fi
  local started=0
  if ! pg_running; then
    pg_start
    started=1
  fi
  wait_until postgres "$PG_LOG" pg_ready
  if ((started)) || ! pg_urls_work; then
    pg_provision
    pg_urls_work || die "postgres: the connection URLs do not work even after provisioning (see $PG_LOG)"
  fi
}

pg_version() {
  psql -X -tA -c 'show server_version' "$(pg_url postgres postgres)" 2>/dev/null | awk '{print $1}'
}

# --------------------------------------------------------------- Redis ------

redis_running() { pid_alive "$REDIS_PID" redis-server; }

# The single Redis runs with the ACL users of deploy/redis/users.sh (docs/roles.md, "Redis
# users"): the default user is off; `env` gives the tests REDIS_URL as admin, and the native
# run (scripts/run.sh) each service its own user. The nodes of the Redis Cluster run with the
# same ACL file (below).

# redis_password NAME: the password of Redis user NAME.
redis_password() { sed -n "s/^$1=\([A-Za-z0-9]*\)$/\1/p" "$REDIS_PASSWORDS" 2>/dev/null | head -n1; }

# redis_ensure_passwords: a password for every user that has none yet (world-readable, as the
# JWT secret is, so `env` works for any user of this test machine).
redis_ensure_passwords() {
  local u
  for u in "${REDIS_USERS[@]}"; do
    [[ -n $(redis_password "$u") ]] && continue
    (umask 022 && printf '%s=%s\n' "$u" "$(openssl rand -hex 24)" >>"$REDIS_PASSWORDS")
  done
}

# redis_write_acl: the ACL file from the passwords (environment to users.sh, no command line).
redis_write_acl() {
  REDIS_ADMIN_PASSWORD="$(redis_password admin)" REDIS_PUBLISHER_PASSWORD="$(redis_password publisher)" \
    REDIS_DASHBOARD_PASSWORD="$(redis_password dashboard)" REDIS_SUBSCRIBER_PASSWORD="$(redis_password subscriber)" \
    "$REDIS_USERS_SH" "$REDIS_ACL" || die "redis: writing the ACL users to $REDIS_ACL failed"
}

# A running server is told to read the ACL file again (ACL LOAD) only when the file differs from
# what that server last read, which a copy per port remembers: ACL LOAD disconnects every client
# of a user it replaces, and a subscriber loses what is published meanwhile (a cluster test's
# `services.sh up` mid-drain lost 86 messages that way).
redis_acl_stamp() { echo "$RUN_DIR/redis-acl-$1"; }
redis_acl_read() { [[ -e $(redis_acl_stamp "$1") ]] && cmp -s "$REDIS_ACL" "$(redis_acl_stamp "$1")"; }
redis_acl_mark_read() { install -m 600 "$REDIS_ACL" "$(redis_acl_stamp "$1")"; }

# redis_cli ARGS...: redis-cli as admin, its password in the environment. On a server started
# before the ACL users existed the AUTH fails and redis-cli goes on as the default user.
redis_cli() {
  REDISCLI_AUTH="$(redis_password admin)" redis-cli --no-auth-warning --user admin -h 127.0.0.1 "$@"
}

redis_ready() { [[ $(redis_cli -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]; }

# redis_user_url USER: the URL of the single Redis as USER.
redis_user_url() { printf 'redis://%s:%s@127.0.0.1:%s/0' "$1" "$(redis_password "$1")" "$REDIS_PORT"; }
redis_running_port() { tr '\0' ' ' <"/proc/$(cat "$REDIS_PID")/cmdline" 2>/dev/null | grep -o ':[0-9]*' | tr -d ':' | head -n1; }

redis_start() {
  if port_open "$REDIS_PORT"; then
    # Debian's own redis-server (from the package's init script) is not ours.
    if pid_alive /run/redis/redis-server.pid redis-server; then
      log "redis: stopping Debian's redis-server service, it holds port $REDIS_PORT (start it again with: service redis-server start)"
      kill "$(cat /run/redis/redis-server.pid)"
      sleep 1
    fi
    port_open "$REDIS_PORT" && die "redis: port 127.0.0.1:$REDIS_PORT is in use by another program (set NC_REDIS_PORT)"
  fi
  log "redis: starting on 127.0.0.1:$REDIS_PORT"
  # No persistence: test data only.
  setsid -w redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --protected-mode yes \
    --daemonize yes --pidfile "$REDIS_PID" --logfile "$REDIS_LOG" --dir "$REDIS_DIR" \
    --save '' --appendonly no --aclfile "$REDIS_ACL" >/dev/null 2>&1 8>&- 9>&- ||
    fail_with_log redis "$REDIS_LOG" "redis-server failed to start"
}

redis_stop() {
  redis_running || return 0
  log "redis: stopping"
  local port pid
  pid="$(cat "$REDIS_PID")"
  port="$(redis_running_port)"
  redis_cli -p "${port:-$REDIS_PORT}" shutdown nosave >/dev/null 2>&1 || true
  for _ in {1..20}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  # SHUTDOWN refused (admin's password not the server's): SIGTERM, which also shuts down.
  kill "$pid" 2>/dev/null || true
  for _ in {1..50}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$REDIS_PID"
}

redis_up() {
  if redis_running && [[ $(redis_running_port) != "$REDIS_PORT" ]]; then
    port_open "$REDIS_PORT" && die "redis: port 127.0.0.1:$REDIS_PORT is in use by another program (set NC_REDIS_PORT)"
    log "redis: running on port $(redis_running_port), restarting on $REDIS_PORT"
    redis_stop
  fi
  redis_write_acl
  if redis_running && redis_ready && [[ -z $(redis_cli -p "$REDIS_PORT" config get aclfile 2>/dev/null | sed -n 2p) ]]; then
    log "redis: running without ACL users (started by an older services.sh), restarting with them"
    redis_stop
  fi
  # A running server reads the file again (a password given anew since its start): ACL LOAD
  # as admin; when admin's own password is the new one, that is refused and Redis restarts.
  if redis_running && ! redis_acl_read "$REDIS_PORT"; then
    if [[ $(redis_cli -p "$REDIS_PORT" acl load 2>&1) == OK ]]; then
      redis_acl_mark_read "$REDIS_PORT"
    else
      log "redis: ACL LOAD refused (admin's password given anew?), restarting with $REDIS_ACL"
      redis_stop
    fi
  fi
  redis_running || { redis_start && redis_acl_mark_read "$REDIS_PORT"; }
  wait_until redis "$REDIS_LOG" redis_ready
}

redis_version() {
  redis_cli -p "$REDIS_PORT" info server 2>/dev/null | sed -n 's/^redis_version:\([^[:space:]]*\).*/\1/p'
}

# ------------------------------------------------------- Elasticsearch ------

es_running() { pid_alive "$ES_PID" org.elasticsearch; }
es_running_ours() { pid_alive "$ES_PID" "-Des.path.home=$ES_HOME "; } # this version
es_ready() {
  curl -fsS -o /dev/null --max-time 10 \
    "http://127.0.0.1:$ES_PORT/_cluster/health?wait_for_status=yellow&timeout=5s" 2>/dev/null
}
es_wait_ready() {
  es_ready && return 0
  local deadline=$((SECONDS + WAIT_TIMEOUT))
  until es_ready; do
    es_running || fail_with_log elasticsearch "$ES_LOG" "the process exited (see also $ES_START_LOG)"
    ((SECONDS < deadline)) || fail_with_log elasticsearch "$ES_LOG" "did not answer within ${WAIT_TIMEOUT}s (NC_WAIT_TIMEOUT)"
    sleep 1
  done
}

file_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

# Download the integ-test-zip from Maven Central once into the cache.
es_fetch() {
  [[ -s $ES_ZIP ]] && return 0
  mkdir -p "$CACHE_DIR"
  local part="$ES_ZIP.part" before after idle=0
  # Serialise our own concurrent runs.
  exec 8>"$ES_ZIP.lock"
  flock 8
  # A download by someone else (another curl) may be writing the .part:
  # wait while it grows, take the final file when it appears.
  while [[ ! -s $ES_ZIP && -f $part ]]; do
    before="$(file_size "$part")"
    sleep 2
    after="$(file_size "$part")"
    if ((after > before)); then
      idle=0
      log "elasticsearch: another download is writing $part ($((after / 1048576)) MB so far), waiting for it"
      sleep 3
    elif ((++idle >= 5)); then
      log "elasticsearch: $part stopped growing, downloading again"
      rm -f "$part"
    fi
  done
  if [[ ! -s $ES_ZIP ]]; then
    log "elasticsearch: downloading $ES_ZIP_URL"
    local progress=(-sS)
    [[ -t 2 ]] && progress=(--progress-bar)
    curl -fL --retry 3 --connect-timeout 20 "${progress[@]}" -o "$part" "$ES_ZIP_URL" ||
      {
        rm -f "$part"
        die "elasticsearch: download failed: $ES_ZIP_URL (is NC_ES_VERSION=$ES_VERSION published? is Maven Central reachable?)"
      }
    mv "$part" "$ES_ZIP"
    log "elasticsearch: downloaded $(($(file_size "$ES_ZIP") / 1048576)) MB to $ES_ZIP"
  fi
  flock -u 8
  exec 8>&-
}

# Check the zip against Maven Central's .sha1 (done once, before unpacking).
es_verify_zip() {
  local want got
  want="$(curl -fsS --max-time 20 "$ES_ZIP_URL.sha1" 2>/dev/null | awk '{print $1}')" || true
  if [[ -z $want ]]; then
    warn "could not fetch $ES_ZIP_URL.sha1, skipping the checksum check"
    return 0
  fi
  got="$(sha1sum "$ES_ZIP" | awk '{print $1}')"
  [[ $want == "$got" ]] && return 0
  rm -f "$ES_ZIP"
  die "elasticsearch: $ES_ZIP had sha1 $got, expected $want; removed it, run 'up' again to download it again"
}

es_install() {
  [[ -f $ES_HOME/.installed ]] && return 0
  es_fetch
  es_verify_zip
  log "elasticsearch: unpacking $ES_VERSION into $ES_HOME"
  local tmp="$ES_BASE/.unpack"
  rm -rf "$tmp" "$ES_HOME"
  mkdir -p "$tmp"
  unzip -q "$ES_ZIP" -d "$tmp" || die "elasticsearch: unzip $ES_ZIP failed (remove it to download again)"
  mv "$tmp/elasticsearch-$ES_VERSION" "$ES_HOME"
  rm -rf "$tmp"
  chown -R "$ES_USER:$ES_USER" "$ES_HOME"
  touch "$ES_HOME/.installed"
}

es_start() {
  port_open "$ES_PORT" && die "elasticsearch: port 127.0.0.1:$ES_PORT is in use by another program (set NC_ES_PORT)"
  local jhome
  jhome="$(java_home)"
  install -d -m 0755 -o "$ES_USER" -g "$ES_USER" "$ES_DATA"
  # Rewritten on every start so NC_ES_PORT changes apply.
  cat >"$ES_HOME/config/elasticsearch.yml" <<EOF
# written by scripts/services.sh - edits are overwritten
cluster.name: north-cloud
node.name: north-cloud-1
discovery.type: single-node
network.host: 127.0.0.1
http.port: $ES_PORT
path.data: $ES_DATA
path.logs: $ES_LOG_DIR
xpack.security.enabled: false
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
EOF
  chown "$ES_USER:$ES_USER" "$ES_HOME/config/elasticsearch.yml"
  rm -f "$ES_PID"
  log "elasticsearch: starting $ES_VERSION on 127.0.0.1:$ES_PORT (heap $ES_HEAP, java $jhome)"
  # -d returns once the node has started (or failed); its output goes to
  # ES_START_LOG, the node's own log to $ES_LOG.
  : >"$ES_START_LOG"
  if ! (cd "$ES_HOME" && timeout "$WAIT_TIMEOUT" setsid -w runuser -u "$ES_USER" -- env \
    ES_JAVA_HOME="$jhome" ES_JAVA_OPTS="-Xms$ES_HEAP -Xmx$ES_HEAP" \
    "$ES_HOME/bin/elasticsearch" -d -p "$ES_PID") >"$ES_START_LOG" 2>&1 </dev/null 8>&- 9>&-; then
    [[ -r $ES_LOG ]] && { echo "--- last 20 lines of $ES_LOG ---" && tail -n 20 "$ES_LOG"; } >&2
    fail_with_log elasticsearch "$ES_START_LOG" "bin/elasticsearch -d failed or did not finish within ${WAIT_TIMEOUT}s"
  fi
}

es_stop() {
  es_running || return 0
  log "elasticsearch: stopping"
  local pid
  pid="$(cat "$ES_PID")"
  kill "$pid" 2>/dev/null || true
  for _ in {1..600}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    warn "elasticsearch did not stop within 60s, killing it"
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$ES_PID"
}

es_up() {
  if es_running && ! es_running_ours; then
    log "elasticsearch: another version is running, switching to $ES_VERSION"
    es_stop
  elif es_running_ours && ! grep -qx "http.port: $ES_PORT" "$ES_HOME/config/elasticsearch.yml"; then
    port_open "$ES_PORT" && die "elasticsearch: port 127.0.0.1:$ES_PORT is in use by another program (set NC_ES_PORT)"
    log "elasticsearch: running on another port, restarting on $ES_PORT"
    es_stop
  fi
  if ! es_running; then
    es_install
    es_start
  fi
  es_wait_ready
}

es_version() {
  # Not GET /: that endpoint lives in the rest-root module, which the
  # integ-test-zip does not ship (GET / answers 405 there).
  curl -fsS --max-time 5 "http://127.0.0.1:$ES_PORT/_nodes/_local?filter_path=nodes.*.version" 2>/dev/null |
    sed -n 's/.*"version" *: *"\([^"]*\)".*/\1/p'
}

# -------------------------------------------------------- Alertmanager ------

am_running() { pid_alive "$AM_PID" "$AM_BIN"; }
am_running_port() { tr '\0' '\n' <"/proc/$(cat "$AM_PID")/cmdline" 2>/dev/null | sed -n 's/^--web.listen-address=.*:\([0-9]*\)$/\1/p'; }
am_ready() { curl -fsS -o /dev/null --max-time 5 "http://127.0.0.1:$AM_PORT/-/ready" 2>/dev/null; }

am_start() {
  port_open "$AM_PORT" && die "alertmanager: port 127.0.0.1:$AM_PORT is in use by another program (set NC_ALERTMANAGER_PORT)"
  log "alertmanager: starting on 127.0.0.1:$AM_PORT"
  # setsid: its own session, so it outlives this script and the shell that ran it; an empty
  # cluster address: one Alertmanager, no gossip port.
  setsid "$AM_BIN" --config.file="$AM_CONFIG" --storage.path="$AM_DIR" \
    --web.listen-address="127.0.0.1:$AM_PORT" --cluster.listen-address= \
    </dev/null >>"$AM_LOG" 2>&1 8>&- 9>&- &
  echo $! >"$AM_PID"
}

am_stop() {
  am_running || return 0
  log "alertmanager: stopping"
  local pid
  pid="$(cat "$AM_PID")"
  kill "$pid" 2>/dev/null || true
  for _ in {1..50}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$AM_PID"
}

am_up() {
  "$AM_BIN" --version >/dev/null 2>&1 || die "alertmanager: $AM_BIN does not run (apt-get install prometheus-alertmanager)"
  if am_running && [[ $(am_running_port) != "$AM_PORT" ]]; then
    log "alertmanager: running on port $(am_running_port), restarting on $AM_PORT"
    am_stop
  fi
  am_running || am_start
  wait_until alertmanager "$AM_LOG" am_ready
}

am_version() {
  curl -fsS --max-time 5 "http://127.0.0.1:$AM_PORT/api/v2/status" 2>/dev/null |
    sed -n 's/.*"version":"\([^"]*\)".*/\1/p'
}

# ---------------------------------------------- Elasticsearch cluster ------
#
# NC_ES_NODES master-eligible data nodes of the same distribution, each with
# its own config, data, logs and pid file under $ES_CLUSTER_DIR/node-<i>, HTTP
# on NC_ES_CLUSTER_PORT+i-1 and transport on NC_ES_CLUSTER_TRANSPORT_PORT+i-1.
# The single node (NC_ES_PORT) is a separate cluster and is not touched.

readonly ES_CLUSTER_DIR="$ES_BASE/cluster-$ES_VERSION" # per version, as ES_DATA

es_cluster_enabled() { ((ES_NODES > 1)); }
es_node_dir() { echo "$ES_CLUSTER_DIR/node-$1"; }
es_node_http() { echo $((ES_CLUSTER_PORT + $1 - 1)); }
es_node_transport() { echo $((ES_CLUSTER_TRANSPORT_PORT + $1 - 1)); }
es_node_running() { pid_alive "$(es_node_dir "$1")/es.pid" org.elasticsearch; }

# es_cluster_urls SEPARATOR: the HTTP URL of every node.
es_cluster_urls() {
  local i out=""
  for ((i = 1; i <= ES_NODES; i++)); do
    out+="${out:+$1}http://127.0.0.1:$(es_node_http "$i")"
  done
  printf '%s' "$out"
}

# The health of the cluster as any live node sees it: all NC_ES_NODES joined
# and every primary assigned.
es_cluster_ready() {
  local i
  for ((i = 1; i <= ES_NODES; i++)); do
    curl -fsS -o /dev/null --max-time 10 \
      "http://127.0.0.1:$(es_node_http "$i")/_cluster/health?wait_for_nodes=$ES_NODES&wait_for_status=yellow&timeout=5s" 2>/dev/null && return 0
  done
  return 1
}

es_node_configure() { # es_node_configure I
  local i=$1 dir seeds="" masters="" j f
  dir="$(es_node_dir "$i")"
  for ((j = 1; j <= ES_NODES; j++)); do
    seeds+="${seeds:+, }\"127.0.0.1:$(es_node_transport "$j")\""
    masters+="${masters:+, }\"nc-es-$j\""
  done
  install -d -m 0755 -o "$ES_USER" -g "$ES_USER" "$ES_CLUSTER_DIR" "$dir"
  install -d -m 0750 -o "$ES_USER" -g "$ES_USER" "$dir/config" "$dir/data" "$dir/logs" "$dir/tmp"
  # The distribution's config (jvm.options, log4j2, ...) once; our own
  # elasticsearch.yml on every start, so port changes apply.
  if [[ ! -e $dir/config/jvm.options ]]; then
    for f in "$ES_HOME/config"/*; do
      [[ ${f##*/} == elasticsearch.yml ]] || cp -R "$f" "$dir/config/"
    done
    chown -R "$ES_USER:$ES_USER" "$dir/config"
  fi
  # cluster.initial_master_nodes only matters for the very first election;
  # a node restarted on its data directory ignores it.
  cat >"$dir/config/elasticsearch.yml" <<EOC
# written by scripts/services.sh - edits are overwritten
cluster.name: north-cloud-cluster
node.name: nc-es-$i
network.host: 127.0.0.1
http.port: $(es_node_http "$i")
transport.port: $(es_node_transport "$i")
discovery.seed_hosts: [$seeds]
cluster.initial_master_nodes: [$masters]
path.data: $dir/data
path.logs: $dir/logs
xpack.security.enabled: false
cluster.routing.allocation.disk.threshold_enabled: false
action.destructive_requires_name: false
EOC
  chown "$ES_USER:$ES_USER" "$dir/config/elasticsearch.yml"
}

# es_node_launch I: start one node in the background of this shell (its
# launcher returns once the node has started); the caller waits.
es_node_launch() {
  local i=$1 dir jhome http transport
  dir="$(es_node_dir "$i")"
  http="$(es_node_http "$i")"
  transport="$(es_node_transport "$i")"
  port_open "$http" && die "elasticsearch cluster: port 127.0.0.1:$http of node $i is in use by another program (set NC_ES_CLUSTER_PORT)"
  port_open "$transport" && die "elasticsearch cluster: transport port 127.0.0.1:$transport of node $i is in use (set NC_ES_CLUSTER_TRANSPORT_PORT)"
  jhome="$(java_home)"
  es_node_configure "$i"
  rm -f "$dir/es.pid"
  log "elasticsearch cluster: starting node nc-es-$i on 127.0.0.1:$http (transport $transport, heap $ES_CLUSTER_HEAP)"
  (cd "$ES_HOME" && timeout "$WAIT_TIMEOUT" setsid -w runuser -u "$ES_USER" -- env \
    ES_PATH_CONF="$dir/config" ES_TMPDIR="$dir/tmp" ES_JAVA_HOME="$jhome" \
    ES_JAVA_OPTS="-Xms$ES_CLUSTER_HEAP -Xmx$ES_CLUSTER_HEAP${ES_CLUSTER_JAVA_OPTS:+ $ES_CLUSTER_JAVA_OPTS}" \
    "$ES_HOME/bin/elasticsearch" -d -p "$dir/es.pid") >"$dir/start.log" 2>&1 </dev/null 8>&- 9>&- &
}

es_cluster_up() {
  es_install
  local i pids=() started=()
  for ((i = 1; i <= ES_NODES; i++)); do
    es_node_running "$i" && continue
    # In parallel: a node's start waits for the cluster to form, which needs
    # the others.
    es_node_launch "$i"
    pids+=("$!")
    started+=("$i")
  done
  for i in "${!pids[@]}"; do
    wait "${pids[i]}" || fail_with_log "elasticsearch node ${started[i]}" "$(es_node_dir "${started[i]}")/start.log" \
      "bin/elasticsearch -d failed or did not finish within ${WAIT_TIMEOUT}s (node log: $(es_node_dir "${started[i]}")/logs/north-cloud-cluster.log)"
  done
  wait_until_or "elasticsearch cluster" "$(es_node_dir 1)/logs/north-cloud-cluster.log" \
    "$ES_NODES nodes did not form a cluster within ${WAIT_TIMEOUT}s (NC_WAIT_TIMEOUT)" es_cluster_ready
}

# es_node_stop I: SIGTERM, then SIGKILL after 60 s.
es_node_stop() {
  local dir pid
  dir="$(es_node_dir "$1")"
  es_node_running "$1" || return 0
  log "elasticsearch cluster: stopping node nc-es-$1"
  pid="$(cat "$dir/es.pid")"
  kill "$pid" 2>/dev/null || true
  for _ in {1..600}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && { warn "node nc-es-$1 did not stop within 60s, killing it"; kill -9 "$pid" 2>/dev/null || true; }
  rm -f "$dir/es.pid"
}

# Every node a previous `up` started, whatever NC_ES_NODES says now.
es_cluster_down() {
  local d
  for d in "$ES_BASE"/cluster-*/node-*; do
    [[ -d $d ]] || continue
    pid_alive "$d/es.pid" org.elasticsearch || continue
    log "elasticsearch cluster: stopping ${d##*/} of ${d%/*}"
    local pid
    pid="$(cat "$d/es.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in {1..600}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
    rm -f "$d/es.pid"
  done
}

es_cluster_status() { # one status_line per node, then the cluster's health
  local i v health
  for ((i = 1; i <= ES_NODES; i++)); do
    v=""
    es_node_running "$i" && v="$(curl -fsS --max-time 5 "http://127.0.0.1:$(es_node_http "$i")/_nodes/_local?filter_path=nodes.*.version" 2>/dev/null |
      sed -n 's/.*"version" *: *"\([^"]*\)".*/\1/p' || true)"
    status_line "es-node-$i" "127.0.0.1:$(es_node_http "$i")" "$v"
  done
  health="$(curl -fsS --max-time 5 "http://127.0.0.1:$(es_node_http 1)/_cat/health?h=status,node.total,node.data" 2>/dev/null || true)"
  printf '%-14s %s\n' "es-cluster" "${health:-no answer from node 1}" >&2
}

# ---------------------------------------------------- Redis Cluster ---------
#
# Six redis-server processes in cluster mode on NC_REDIS_CLUSTER_PORT.. +5,
# joined by `redis-cli --cluster create --cluster-replicas 1`: 3 masters
# holding the 16384 slots, each with a replica that takes over when its
# master is silent for NC_REDIS_CLUSTER_NODE_TIMEOUT ms. nodes.conf in each
# node's directory keeps the topology, so a restarted node rejoins (a
# restarted former master as a replica of its successor).

readonly REDIS_CLUSTER_DIR="$STATE_DIR/redis-cluster"

redis_cluster_enabled() { [[ $REDIS_CLUSTER == 1 ]]; }
redis_node_port() { echo $((REDIS_CLUSTER_PORT + $1 - 1)); }
redis_node_pid() { echo "$RUN_DIR/redis-cluster-$(redis_node_port "$1").pid"; }
redis_node_log() { echo "$LOG_DIR/redis-cluster-$(redis_node_port "$1").log"; }
redis_node_running() { pid_alive "$(redis_node_pid "$1")" redis-server; }
redis_node_cli() { local i=$1; shift; redis_cli -p "$(redis_node_port "$i")" "$@"; }

# redis_cluster_url [USER]: the URL the publisher and tests are given, as USER (admin by
# default): one seed node and the others as addr parameters (go-redis ParseClusterURL); the
# client discovers the rest.
redis_cluster_url() {
  local i q="" user=${1:-admin}
  for ((i = 2; i <= 3; i++)); do q+="${q:+&}addr=127.0.0.1:$(redis_node_port "$i")"; done
  printf 'redis+cluster://%s:%s@127.0.0.1:%s?%s' "$user" "$(redis_password "$user")" "$(redis_node_port 1)" "$q"
}

# redis_node_conf DIR: the node's own config file (mode 600, read as redis-server's first
# argument): how a replica authenticates to its master, admin's password kept off the command
# line. Written at each start, so a password given anew reaches every node.
redis_node_conf() {
  (umask 077 && printf 'masteruser admin\nmasterauth %s\n' "$(redis_password admin)" >"$1/auth.conf")
}

redis_node_start() {
  local i=$1 port dir
  port="$(redis_node_port "$i")"
  dir="$REDIS_CLUSTER_DIR/$port"
  port_open "$port" && die "redis cluster: port 127.0.0.1:$port of node $i is in use by another program (set NC_REDIS_CLUSTER_PORT)"
  port_open $((port + 10000)) && die "redis cluster: bus port 127.0.0.1:$((port + 10000)) of node $i is in use (set NC_REDIS_CLUSTER_PORT)"
  install -d -m 0755 "$dir"
  redis_node_conf "$dir"
  log "redis cluster: starting node $i on 127.0.0.1:$port"
  # No persistence of data (test data only); nodes.conf keeps the topology. The ACL users of
  # the single Redis (deploy/redis/users.sh): the default user is off here too.
  setsid -w redis-server "$dir/auth.conf" --bind 127.0.0.1 --port "$port" --protected-mode yes \
    --daemonize yes --pidfile "$(redis_node_pid "$i")" --logfile "$(redis_node_log "$i")" --dir "$dir" \
    --aclfile "$REDIS_ACL" --save '' --appendonly no --cluster-enabled yes --cluster-config-file nodes.conf \
    --cluster-node-timeout "$REDIS_CLUSTER_NODE_TIMEOUT" >/dev/null 2>&1 8>&- 9>&- ||
    fail_with_log "redis cluster node $i" "$(redis_node_log "$i")" "redis-server failed to start"
}

redis_node_ready() { [[ $(redis_node_cli "$1" ping 2>/dev/null) == PONG ]]; }

# Every node sees all 16384 slots served and all 6 nodes.
redis_cluster_ok() {
  local i info
  for ((i = 1; i <= REDIS_CLUSTER_NODES; i++)); do
    info="$(redis_node_cli "$i" cluster info 2>/dev/null | tr -d '\r')" || return 1
    grep -qx 'cluster_state:ok' <<<"$info" || return 1
    grep -qx "cluster_known_nodes:$REDIS_CLUSTER_NODES" <<<"$info" || return 1
  done
}

redis_cluster_up() {
  local i addrs=() assigned=0
  redis_write_acl
  for ((i = 1; i <= REDIS_CLUSTER_NODES; i++)); do
    # A node started before its users existed (an older services.sh): started again with them.
    if redis_node_running "$i" && [[ $(redis_node_cli "$i" acl whoami 2>/dev/null) != admin ]]; then
      log "redis cluster: node $i runs without the ACL users, restarting it with them"
      redis_node_stop "$i"
    fi
    # A running node reads the file again (a password given anew since its start).
    if redis_node_running "$i" && ! redis_acl_read "$(redis_node_port "$i")" &&
      [[ $(redis_node_cli "$i" acl load 2>&1) == OK ]]; then
      redis_acl_mark_read "$(redis_node_port "$i")"
    fi
    redis_node_running "$i" || { redis_node_start "$i" && redis_acl_mark_read "$(redis_node_port "$i")"; }
  done
  for ((i = 1; i <= REDIS_CLUSTER_NODES; i++)); do
    wait_until "redis cluster node $i" "$(redis_node_log "$i")" redis_node_ready "$i"
    addrs+=("127.0.0.1:$(redis_node_port "$i")")
    assigned=$((assigned + $(redis_node_cli "$i" cluster info | tr -d '\r' | sed -n 's/^cluster_slots_assigned://p')))
  done
  if ((assigned == 0)); then
    log "redis cluster: creating 3 masters with a replica each on ${addrs[*]}"
    REDISCLI_AUTH="$(redis_password admin)" redis-cli --no-auth-warning --user admin --cluster create "${addrs[@]}" \
      --cluster-replicas 1 --cluster-yes >"$LOG_DIR/redis-cluster-create.log" 2>&1 ||
      fail_with_log "redis cluster" "$LOG_DIR/redis-cluster-create.log" "redis-cli --cluster create failed"
  fi
  wait_until_or "redis cluster" "$(redis_node_log 1)" \
    "the cluster is not ok on every node within ${WAIT_TIMEOUT}s; to start over: $0 down-clusters && rm -rf $REDIS_CLUSTER_DIR" redis_cluster_ok
}

# Every node a previous `up` started, whatever the settings say now.
redis_cluster_down() {
  local f
  for f in "$RUN_DIR"/redis-cluster-*.pid; do
    [[ -e $f ]] && redis_pidfile_stop "$f"
  done
}

redis_node_stop() { redis_pidfile_stop "$(redis_node_pid "$1")"; }

# redis_pidfile_stop FILE: SIGTERM to the node of FILE (SIGKILL after 5 s).
redis_pidfile_stop() {
  local f=$1 pid
  pid_alive "$f" redis-server || { rm -f "$f"; return 0; }
  pid="$(cat "$f")"
  log "redis cluster: stopping the node of $(basename "$f" .pid)"
  kill "$pid" 2>/dev/null || true
  for _ in {1..50}; do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
  rm -f "$f"
}

redis_cluster_status() {
  local i v role
  for ((i = 1; i <= REDIS_CLUSTER_NODES; i++)); do
    v=""
    role=""
    if redis_node_ready "$i"; then
      v="$(redis_node_cli "$i" info server 2>/dev/null | sed -n 's/^redis_version:\([^[:space:]]*\).*/\1/p')"
      role="$(redis_node_cli "$i" info replication 2>/dev/null | tr -d '\r' | sed -n 's/^role://p')"
    fi
    status_line "redis-node-$i" "127.0.0.1:$(redis_node_port "$i")" "$v" "$role"
  done
  printf '%-14s %s\n' "redis-cluster" "$(redis_node_cli 1 cluster info 2>/dev/null | tr -d '\r' | grep -E '^cluster_(state|slots_ok|known_nodes|size):' | tr '\n' ' ')" >&2
}

check_cluster_settings() {
  [[ $ES_NODES =~ ^[1-9]$ ]] || die "NC_ES_NODES must be a number of nodes from 1 to 9 (got '$ES_NODES')"
  [[ $REDIS_CLUSTER =~ ^[01]$ ]] || die "NC_REDIS_CLUSTER must be 0 or 1 (got '$REDIS_CLUSTER')"
  local v
  for v in "$ES_CLUSTER_PORT" "$ES_CLUSTER_TRANSPORT_PORT" "$REDIS_CLUSTER_PORT" "$REDIS_CLUSTER_NODE_TIMEOUT"; do
    [[ $v =~ ^[0-9]+$ ]] || die "cluster ports and NC_REDIS_CLUSTER_NODE_TIMEOUT must be numbers (got '$v')"
  done
}

# ------------------------------------------------------------ commands ------

cmd_up() {
  need_root up
  ensure_packages
  ensure_state_dirs
  lock_state
  save_ports # before starting, so env/status/down find the ports even if a start fails
  pg_up
  if redis_cluster_enabled; then redis_cluster_up; else redis_up; fi
  if es_cluster_enabled; then es_cluster_up; else es_up; fi
  am_up
  cmd_status || true
  local prefix=""
  [[ $STATE_DIR == /var/lib/north-cloud ]] || prefix="NC_STATE_DIR=$STATE_DIR "
  # shellcheck disable=SC2016 # the $(...) is meant literally
  es_cluster_enabled && prefix+="NC_ES_NODES=$ES_NODES "
  redis_cluster_enabled && prefix+="NC_REDIS_CLUSTER=1 "
  printf '\nready; load the settings into your shell with:\n  eval "$(%s%s env)"\n' "$prefix" "$0" >&2
}

cmd_down() {
  need_root down
  [[ -d $STATE_DIR ]] && lock_state
  es_cluster_down
  redis_cluster_down
  es_stop
  redis_stop
  pg_stop
  am_stop
  log "all stopped"
}

# The clusters only: the single-node services (and Postgres) keep running.
cmd_down_clusters() {
  need_root down-clusters
  [[ -d $STATE_DIR ]] && lock_state
  es_cluster_down
  redis_cluster_down
  log "clusters stopped"
}

cmd_status() {
  local rc=0 v
  status_line() { # NAME ADDRESS VERSION [NOTE]
    if [[ -n $3 ]]; then
      printf '%-14s %-16s %-10s %s\n' "$1" "$2" "$3" "up${4:+ ($4)}" >&2
    else
      printf '%-14s %-16s %-10s %s\n' "$1" "$2" "-" "DOWN" >&2
      rc=1
    fi
  }
  # Each probe may fail: a failure means "down", not an abort (set -e).
  v="$(pg_version || true)"
  status_line postgres "127.0.0.1:$PG_PORT" "$v"
  if redis_cluster_enabled; then
    redis_cluster_status
  else
    v=""
    redis_ready && v="$(redis_version || true)"
    status_line redis "127.0.0.1:$REDIS_PORT" "$v"
  fi
  if es_cluster_enabled; then
    es_cluster_status
  else
    v=""
    es_ready && v="$(es_version || true)"
    status_line elasticsearch "127.0.0.1:$ES_PORT" "$v"
  fi
  v=""
  am_ready && v="$(am_version || true)"
  status_line alertmanager "127.0.0.1:$AM_PORT" "$v"
  return "$rc"
}

# shell_quote VALUE: single-quoted for eval.
shell_quote() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

cmd_env() {
  if [[ ! -s $JWT_FILE ]]; then
    [[ $(id -u) -eq 0 ]] || die "no JWT secret yet in $JWT_FILE; run 'sudo $0 up' first"
    ensure_state_dirs
  fi
  local jwt
  jwt="$(cat "$JWT_FILE")" || die "cannot read $JWT_FILE"
  if [[ -z $(redis_password subscriber) ]]; then
    [[ $(id -u) -eq 0 ]] || die "no Redis passwords yet in $REDIS_PASSWORDS; run 'sudo $0 up' first"
    redis_ensure_passwords
  fi
  local es_url="http://127.0.0.1:$ES_PORT" redis_url
  redis_url="$(redis_user_url admin)"
  es_cluster_enabled && es_url="http://127.0.0.1:$(es_node_http 1)"
  redis_cluster_enabled && redis_url="$(redis_cluster_url)"
  local -a vars=(
    POSTGRES_ADMIN_URL "$(pg_url postgres postgres)"
    CLASSIFIER_DATABASE_URL "$(pg_url classifier classifier)"
    CLASSIFIER_OUTBOX_DATABASE_URL "$(pg_url classifier publisher)"
    PUBLISHER_DATABASE_URL "$(pg_url publisher publisher)"
    INDEX_MANAGER_DATABASE_URL "$(pg_url index_manager index_manager)"
    REDIS_URL "$redis_url"
    ELASTICSEARCH_URL "$es_url"
    ALERTMANAGER_URL "http://127.0.0.1:$AM_PORT"
    JWT_SECRET "$jwt"
    NC_STATE_DIR "$STATE_DIR"
  )
  if es_cluster_enabled; then
    vars+=(NC_ES_CLUSTER_URLS "$(es_cluster_urls ,)" NC_ES_NODES "$ES_NODES")
  fi
  # The role users beside admin's REDIS_URL: what the native run gives each service, and what
  # deploy/opstest's Redis users test checks (on the Redis Cluster too).
  local url=redis_user_url
  if redis_cluster_enabled; then
    vars+=(NC_REDIS_CLUSTER 1)
    url=redis_cluster_url
  fi
  vars+=(NC_REDIS_PUBLISHER_URL "$($url publisher)" NC_REDIS_DASHBOARD_URL "$($url dashboard)"
    NC_REDIS_SUBSCRIBER_URL "$($url subscriber)")
  local i
  for ((i = 0; i < ${#vars[@]}; i += 2)); do
    printf 'export %s=%s\n' "${vars[i]}" "$(shell_quote "${vars[i + 1]}")"
  done
}

cmd_logs() {
  local lines="${NC_LOG_LINES:-50}" f
  local -a files
  case "${1:-all}" in
    postgres | pg) files=("$PG_LOG") ;;
    redis) files=("$REDIS_LOG") ;;
    elasticsearch | es) files=("$ES_LOG" "$ES_START_LOG") ;;
    es-cluster) files=("$ES_BASE"/cluster-"$ES_VERSION"/node-*/logs/north-cloud-cluster.log) ;;
    redis-cluster) files=("$LOG_DIR"/redis-cluster-*.log) ;;
    alertmanager | am) files=("$AM_LOG") ;;
    all) files=("$PG_LOG" "$REDIS_LOG" "$ES_LOG" "$AM_LOG") ;;
    *) die "unknown service '$1' (postgres, redis, elasticsearch, alertmanager, es-cluster, redis-cluster)" ;;
  esac
  for f in "${files[@]}"; do
    printf -- '--- %s ---\n' "$f" >&2
    tail -n "$lines" "$f" >&2 2>/dev/null || printf '(not readable or missing)\n' >&2
  done
}

usage() {
  cat >&2 <<EOF
usage: $0 up|down|down-clusters|status|env|logs [postgres|redis|elasticsearch|alertmanager|es-cluster|redis-cluster]
  up             install missing packages, start PostgreSQL, Redis, Elasticsearch and Alertmanager on loopback, wait
  down           stop all four (and the clusters)
  down-clusters  stop the Elasticsearch and Redis clusters only
  status         address, version and state of each; exit 1 if any is down
  env            export lines for eval "\$($0 env)"
  logs           last \${NC_LOG_LINES:-50} lines of the service logs
clusters (the single-node services keep running beside them):
  NC_ES_NODES=3        up/status/env use a 3-node Elasticsearch cluster on ports ${ES_CLUSTER_PORT}.. (transport ${ES_CLUSTER_TRANSPORT_PORT}..)
  NC_REDIS_CLUSTER=1   up/status/env use a Redis Cluster (3 masters + 3 replicas) on ports ${REDIS_CLUSTER_PORT}..
  e.g. sudo NC_ES_NODES=3 NC_REDIS_CLUSTER=1 $0 up && eval "\$(NC_ES_NODES=3 NC_REDIS_CLUSTER=1 $0 env)"
state: $STATE_DIR   cache: $CACHE_DIR
EOF
}

main() {
  check_cluster_settings
  case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    down-clusters) cmd_down_clusters ;;
    status) cmd_status ;;
    env) cmd_env ;;
    logs) cmd_logs "${2:-all}" ;;
    -h | --help | help) usage ;;
    *)
      usage
      exit 2
      ;;
  esac
}

main "$@"
