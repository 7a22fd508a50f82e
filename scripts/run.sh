#!/usr/bin/env bash
# run.sh - run the whole system natively, without Docker: the backing services
# (scripts/services.sh), then classifier, publisher, index-manager and the
# dashboard server (:3000) from bin/ (built by `scripts/build.sh`, or `task build`) in the
# background, then demo raw content from the loader so the pipeline visibly
# runs.
#
#   scripts/run.sh start     start (idempotent) and load demo data
#   scripts/run.sh stop      stop the three services (SIGTERM, graceful)
#   scripts/run.sh status    which run, and their /ready answers
#
# Logs and pid files: $NC_STATE_DIR/app/<service>.{log,pid}.
# Prometheus (Debian's `prometheus` package, when installed) scrapes them on
# 127.0.0.1:${NC_PROMETHEUS_PORT:-9090} with deploy/prometheus/prometheus.native.yml;
# data, log and pid under $NC_STATE_DIR/prometheus.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
services=(publisher classifier index-manager dashboard)
declare -A ports=([classifier]=8071 [publisher]=8070 [index-manager]=8090 [dashboard]=3000)

say() { echo "run.sh: $*" >&2; }

load_env() {
  eval "$("$root/scripts/services.sh" env)"
  app="$NC_STATE_DIR/app"
  mkdir -p "$app"
}

running() { [ -f "$app/$1.pid" ] && kill -0 "$(cat "$app/$1.pid")" 2>/dev/null; }

wait_ready() {
  local svc=$1 port=${ports[$1]} deadline=$((SECONDS + 60))
  until curl -fsS "http://127.0.0.1:$port/ready" >/dev/null 2>&1; do
    if ! running "$svc"; then
      say "$svc exited; last lines of $app/$svc.log:"
      tail -n 20 "$app/$svc.log" >&2
      exit 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      say "$svc not ready after 60s: $(curl -s "http://127.0.0.1:$port/ready")"
      exit 1
    fi
    sleep 0.5
  done
}

# ---- Prometheus (optional: only when the binary is installed) ------------------
prom_dir() { echo "$NC_STATE_DIR/prometheus"; }
prom_running() { [ -f "$(prom_dir)/prometheus.pid" ] && kill -0 "$(cat "$(prom_dir)/prometheus.pid")" 2>/dev/null; }

prometheus_start() {
  local port=${NC_PROMETHEUS_PORT:-9090} dir deadline
  dir=$(prom_dir)
  if ! command -v prometheus >/dev/null; then
    say "prometheus not installed (apt-get install prometheus); not starting it"
    return 0
  fi
  if prom_running; then
    say "prometheus already running (pid $(cat "$dir/prometheus.pid"))"
    return 0
  fi
  mkdir -p "$dir/data"
  setsid prometheus --config.file="$root/deploy/prometheus/prometheus.native.yml" \
    --storage.tsdb.path="$dir/data" --storage.tsdb.retention.time=7d \
    --web.listen-address="127.0.0.1:$port" \
    >>"$dir/prometheus.log" 2>&1 </dev/null &
  echo $! >"$dir/prometheus.pid"
  deadline=$((SECONDS + 30))
  until curl -fsS "http://127.0.0.1:$port/-/ready" >/dev/null 2>&1; do
    if ! prom_running || [ $SECONDS -ge $deadline ]; then
      say "prometheus did not start; last lines of $dir/prometheus.log:"
      tail -n 20 "$dir/prometheus.log" >&2
      exit 1
    fi
    sleep 0.5
  done
  say "prometheus ready on http://127.0.0.1:$port (alerts: /alerts; log: $dir/prometheus.log)"
}

prometheus_stop() {
  prom_running || return 0
  kill -TERM "$(cat "$(prom_dir)/prometheus.pid")"
  for _ in $(seq 1 60); do prom_running || break; sleep 0.5; done
  rm -f "$(prom_dir)/prometheus.pid"
  say "prometheus stopped"
}

# dashboard_setup builds dashboard/dist when it is missing or older than its
# sources, and gives the dashboard an operator login: INDEX_MANAGER_ADMIN_*
# from the environment, else user "admin" with a password generated once
# into $app/admin.password.
dashboard_setup() {
  local dash="$root/dashboard"
  if [ ! -f "$dash/dist/index.html" ] || [ -n "$(cd "$dash" && find src index.html package-lock.json vite.config.ts -newer dist/index.html 2>/dev/null | head -1)" ]; then
    say "building the dashboard (npm ci && npm run build)"
    (cd "$dash" && { [ -d node_modules ] && [ ! package-lock.json -nt node_modules/.package-lock.json ] || npm ci --no-audit --no-fund; } && npm run build) >&2
  fi
  export DASHBOARD_DIST="$dash/dist"
  if [ -z "${INDEX_MANAGER_ADMIN_USER:-}" ]; then
    if [ ! -s "$app/admin.password" ]; then
      (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$app/admin.password")
    fi
    export INDEX_MANAGER_ADMIN_USER=admin
    INDEX_MANAGER_ADMIN_PASSWORD_HASH=$(tr -d '\n' <"$app/admin.password" | "$bin/index-manager" hash-password)
    export INDEX_MANAGER_ADMIN_PASSWORD_HASH
  fi
}

start() {
  "$root/scripts/services.sh" up
  load_env
  for svc in "${services[@]}"; do
    [ -x "$bin/$svc" ] || { say "$bin/$svc missing: run \`scripts/build.sh\` first"; exit 1; }
  done
  export LOG_FORMAT="${LOG_FORMAT:-text}"
  export CLASSIFIER_POLL_INTERVAL="${CLASSIFIER_POLL_INTERVAL:-1s}"
  # Every raw index except the tests' own (named nctest<hex>_..., see
  # infrastructure/testenv), so `scripts/test.sh` can run beside this stack.
  export CLASSIFIER_INDEX_PATTERN="${CLASSIFIER_INDEX_PATTERN:-*_raw_content,-nctest*}"
  export PUBLISHER_OUTBOX_POLL_INTERVAL="${PUBLISHER_OUTBOX_POLL_INTERVAL:-1s}"
  # The dashboard's charts read their history from the Prometheus started below.
  export PROMETHEUS_URL="${PROMETHEUS_URL:-http://127.0.0.1:${NC_PROMETHEUS_PORT:-9090}}"
  # Its silences: the Alertmanager of scripts/services.sh (ALERTMANAGER_URL from its `env`).
  export ALERTMANAGER_URL="${ALERTMANAGER_URL:-http://127.0.0.1:${NC_ALERTMANAGER_PORT:-9093}}"
  # The dashboard's live tail subscribes to the publisher's Redis (one server:
  # with a Redis Cluster the publisher uses sharded pub/sub, which it does not tail),
  # as Redis user dashboard (subscribe only).
  case "${REDIS_URL:-}" in
    *+cluster://*) ;;
    *) export DASHBOARD_REDIS_URL="${DASHBOARD_REDIS_URL:-${NC_REDIS_DASHBOARD_URL:-${REDIS_URL:-}}}" ;;
  esac
  dashboard_setup
  for svc in "${services[@]}"; do
    if running "$svc"; then
      say "$svc already running (pid $(cat "$app/$svc.pid"))"
      continue
    fi
    # Each service its own Redis user (docs/roles.md, "Redis users"): the publisher's may
    # publish and nothing more; REDIS_URL of the env (admin, for the tests) reaches none.
    # On the Redis Cluster NC_REDIS_PUBLISHER_URL names the same user on the cluster.
    local -a redis_env=(-u REDIS_URL -u NC_REDIS_PUBLISHER_URL -u NC_REDIS_DASHBOARD_URL -u NC_REDIS_SUBSCRIBER_URL)
    if [ "$svc" = publisher ]; then redis_env+=("REDIS_URL=${NC_REDIS_PUBLISHER_URL:-$REDIS_URL}"); fi
    # setsid: the service outlives this script and gets signals of its own.
    setsid env "${redis_env[@]}" "$bin/$svc" >>"$app/$svc.log" 2>&1 </dev/null &
    echo $! >"$app/$svc.pid"
    wait_ready "$svc"
    say "$svc ready on http://127.0.0.1:${ports[$svc]} (log: $app/$svc.log)"
  done
  prometheus_start
  "$bin/loader" -count "${LOADER_COUNT:-200}" -sources "${LOADER_SOURCES:-demo_news,demo_metro,demo_sports}"
  cat >&2 <<MSG

The pipeline is running. Dashboard: http://127.0.0.1:3000 (user ${INDEX_MANAGER_ADMIN_USER:-admin},
password in $app/admin.password unless INDEX_MANAGER_ADMIN_* were set).
Watch documents arrive on Redis (as user subscriber, which may only subscribe):
  redis-cli -u "\$NC_REDIS_SUBSCRIBER_URL" PSUBSCRIBE 'articles:*' 'content:*'
and load more with:
  eval "\$(scripts/services.sh env)"; bin/loader -count 20 -sources demo_news
Metrics: curl -s localhost:8071/metrics | grep classifier_
Stop with: scripts/task run:stop
MSG
}

stop() {
  load_env
  for svc in "${services[@]}"; do
    if running "$svc"; then
      kill -TERM "$(cat "$app/$svc.pid")"
      for _ in $(seq 1 60); do running "$svc" || break; sleep 0.5; done
      if running "$svc"; then
        say "$svc did not stop within 30s; killing it"
        kill -KILL "$(cat "$app/$svc.pid")"
      fi
      say "$svc stopped"
    fi
    rm -f "$app/$svc.pid"
  done
  prometheus_stop
}

status() {
  load_env
  local rc=0
  for svc in "${services[@]}"; do
    if running "$svc"; then
      printf '%-14s pid %-8s %s\n' "$svc" "$(cat "$app/$svc.pid")" "$(curl -s "http://127.0.0.1:${ports[$svc]}/ready")"
    else
      printf '%-14s stopped\n' "$svc"
      rc=1
    fi
  done
  return $rc
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
