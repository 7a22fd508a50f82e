#!/usr/bin/env bash
# compose-test.sh - runs the container stack of docker-compose.yml for real and checks what a
# user checks after `scripts/init-env.sh && docker compose up --build`:
#
#   1. migrations ran (publisher-migrate, classifier-migrate and the loader exited 0);
#   2. /ready of the classifier, publisher, index-manager and dashboard answers 200;
#   3. the loader's documents arrive on a Redis subscriber (PSUBSCRIBE 'articles:*' 'content:*'),
#      published by the publisher's Redis user and heard by the subscriber's; without a user
#      Redis refuses everything, and each user is refused what its role does not allow
#      (deploy/redis/users.sh): the publisher FLUSHALL, CONFIG, KEYS, DEL; the subscriber and
#      the dashboard PUBLISH; the dashboard's live tail hears a message as its own user;
#   4. the dashboard serves its login page, and the index list through its proxy after a login
#      with the operator password init-env.sh printed;
#   5. Prometheus scrapes every target with up == 1, its alert rules are loaded, and every
#      query of deploy/grafana/dashboards runs (Grafana itself only when an image is there);
#   5b. Jaeger's query API holds a loaded document's trace: classifier.claim.document,
#      classifier.classify, classifier.outbox.row from the classifier and publisher.publish
#      from the publisher, in one trace (the services' OTLP export to http://jaeger:4318);
#   6. `up --scale classifier=3 --scale publisher=2` shares the work (two or more classifiers
#      classify a second load) and no message is published twice;
#   7. `docker compose down -v` leaves no container and no volume of the project.
#
# Engine: an existing Docker engine, else Debian's docker.io installed with apt-get and
# dockerd started in the background (log in $NC_STATE_DIR/logs/dockerd.log), as
# scripts/services.sh starts the other services. Docker Compose v2 is built from the Go module
# proxy once (cached in $NC_CACHE_DIR) and installed as a CLI plugin. Where `docker pull`
# reaches no registry, deploy/offline/build-images.sh builds local stand-ins (kept between
# runs) and packs the services from binaries built on this machine, and
# deploy/offline/compose.offline.yml selects them.
#
# Usage: compose-test.sh [--prepare]
#   --prepare   only the engine, the compose plugin and the stand-in images (no Go or npm
#               build, no stack): scripts/test.sh runs it in the background while the Go tests
#               run. Never fails (the run proper reports what is missing).
#
# The stack runs from the working tree with a throwaway env file written by
# scripts/init-env.sh (never the tree's .env), on ports 23xxx, so the native services of
# scripts/services.sh keep theirs. Compose project: north-cloud (the file's own name); the
# script refuses to run while a stack of that project is up.
#
# Outside CI the test is skipped (exit 0, with the reason) where no engine can be had (not
# root, apt-get fails, dockerd does not start); under CI=true that is a failure.
#
# Settings (environment):
#   NC_STATE_DIR              dockerd's pid and log               (/var/lib/north-cloud)
#   NC_CACHE_DIR              compose binary, Elasticsearch zip   ($HOME/.cache/north-cloud)
#   NC_COMPOSE_VERSION        Docker Compose to build             (v2.40.3)
#   NC_COMPOSE_OFFLINE        1 stand-ins, 0 official images, auto tries one pull (auto)
#   NC_COMPOSE_SETUP_BUDGET   seconds for the engine, compose, the stand-ins and
#                             `docker compose build` (a first, cold run builds them all) (600)
#   NC_COMPOSE_BUDGET         seconds for the stack: up --build to down -v     (600)
#   NC_COMPOSE_ENV            more VAR=value lines for the stack's env file, e.g. a service
#                             setting to try (CLASSIFIER_SHADOW_MATCHER=token_index)  (none)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
readonly ROOT
readonly STATE_DIR="${NC_STATE_DIR:-/var/lib/north-cloud}"
readonly CACHE_DIR="${NC_CACHE_DIR:-${HOME:-/root}/.cache/north-cloud}"
readonly COMPOSE_VERSION="${NC_COMPOSE_VERSION:-v2.40.3}"
readonly OFFLINE="${NC_COMPOSE_OFFLINE:-auto}"
readonly SETUP_BUDGET="${NC_COMPOSE_SETUP_BUDGET:-600}"
readonly BUDGET="${NC_COMPOSE_BUDGET:-600}"
readonly PROJECT=north-cloud
readonly LOG_DIR="$STATE_DIR/logs"
readonly DOCKERD_PID="$STATE_DIR/run/dockerd.pid"
readonly DOCKERD_LOG="$LOG_DIR/dockerd.log"

# Host ports of the test stack (docker-compose.yml's *_PORT(S) variables).
readonly -a TEST_PORTS=(
  DASHBOARD_PORT=23000 GRAFANA_PORT=23001 CLASSIFIER_PORTS=23071-23073 PUBLISHER_PORTS=23074-23075
  INDEX_MANAGER_PORT=23090 PROMETHEUS_PORT=23190 ALERTMANAGER_PORT=23193 POSTGRES_CLASSIFIER_PORT=23433
  POSTGRES_PUBLISHER_PORT=23434 POSTGRES_INDEX_MANAGER_PORT=23435 REDIS_PORT=23379
  ELASTICSEARCH_PORT=23200 JAEGER_PORT=23686
)

log() { printf '==> compose-test: %s\n' "$*" >&2; }
die() {
  printf 'compose-test: FAIL: %s\n' "$*" >&2
  exit 1
}
# skip REASON: no engine here. A failure under CI, a skip elsewhere.
skip() {
  if [[ ${CI:-} == true ]]; then die "no Docker engine: $* (CI=true: the compose test must run)"; fi
  printf 'compose-test: SKIPPED: no Docker engine: %s\n' "$*" >&2
  exit 0
}

STEPS=()
# step NAME COMMAND...: runs a step, prints and records its seconds.
step() {
  local name=$1 start=$SECONDS
  shift
  log "$name"
  "$@"
  STEPS+=("$(printf '%-34s %4ds' "$name" $((SECONDS - start)))")
  log "$name: ok ($((SECONDS - start))s)"
}
print_steps() {
  printf '%s\n' "--- compose-test steps ---" "${STEPS[@]}" >&2
}

# ------------------------------------------------------------ engine -------

engine_up() {
  docker info >/dev/null 2>&1 && return 0
  [[ $(id -u) == 0 ]] || skip "no engine answers and starting one needs root"
  if ! command -v dockerd >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -q -y install --no-install-recommends docker.io >&2 ||
      skip "apt-get install docker.io failed"
  fi
  install -d -m 0755 "$LOG_DIR" "$(dirname "$DOCKERD_PID")"
  log "starting dockerd (log: $DOCKERD_LOG)"
  # setsid: the engine outlives this script, like the services of scripts/services.sh.
  setsid dockerd --pidfile "$DOCKERD_PID" >>"$DOCKERD_LOG" 2>&1 </dev/null &
  local deadline=$((SECONDS + 60))
  until docker info >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      tail -n 20 "$DOCKERD_LOG" >&2 || true
      skip "dockerd did not answer within 60s (log: $DOCKERD_LOG)"
    fi
    sleep 1
  done
}

compose_install() {
  if docker compose version 2>/dev/null | grep -q 'v2\.'; then return 0; fi
  local bin="$CACHE_DIR/docker-compose-$COMPOSE_VERSION" src
  if [[ ! -x $bin ]]; then
    command -v go >/dev/null || die "building Docker Compose needs Go"
    log "building Docker Compose $COMPOSE_VERSION from the Go module proxy (about two minutes)"
    src="$(cd /tmp && go mod download -json "github.com/docker/compose/v2@$COMPOSE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
    [[ -d $src ]] || die "go mod download github.com/docker/compose/v2@$COMPOSE_VERSION failed"
    # A writable copy built as the main module (go install refuses its exclude directives).
    rm -rf "$WORK/compose-src" && cp -r "$src" "$WORK/compose-src" && chmod -R u+w "$WORK/compose-src"
    mkdir -p "$CACHE_DIR"
    # CGO_ENABLED=0 -trimpath: the configuration of the project's own builds
    # (scripts/build.sh), whose compiled standard library it reuses.
    (cd "$WORK/compose-src" && CGO_ENABLED=0 nice -n 10 go build -trimpath \
      -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" -o "$bin.tmp" ./cmd) ||
      die "go build of Docker Compose failed"
    mv "$bin.tmp" "$bin"
  fi
  local dir=/usr/local/lib/docker/cli-plugins
  [[ $(id -u) == 0 ]] || dir="$HOME/.docker/cli-plugins"
  install -D -m 0755 "$bin" "$dir/docker-compose"
  docker compose version >&2 || die "docker compose does not run after installing $dir/docker-compose"
}

FILES=(-f "$ROOT/docker-compose.yml")
images() {
  local offline=$OFFLINE
  if [[ $offline == auto ]]; then
    offline=0
    if ! docker image inspect redis:7-alpine >/dev/null 2>&1 && ! timeout 30 docker pull -q redis:7-alpine >/dev/null 2>&1; then
      log "no image registry answers (docker pull redis:7-alpine): using the offline stand-ins"
      offline=1
    fi
  fi
  if [[ $offline == 1 ]]; then
    "$ROOT/deploy/offline/build-images.sh" ${1:-all}
    FILES+=(-f "$ROOT/deploy/offline/compose.offline.yml")
  fi
  nofile_limit
}

# Elasticsearch's nofile ulimit (65535 in docker-compose.yml) cannot exceed the engine's own
# hard limit, or the container does not start ("error setting rlimits"). Where the engine
# runs under a lower one (a sandbox's), lower Elasticsearch's to it: in single-node mode the
# file-descriptor bootstrap check only warns.
nofile_limit() {
  local pid hard
  pid="$(pidof dockerd | cut -d' ' -f1)" || return 0
  hard="$(awk '/^Max open files/ { print $5 }' "/proc/$pid/limits" 2>/dev/null)" || return 0
  [[ $hard =~ ^[0-9]+$ ]] && ((hard < 65535)) || return 0
  log "dockerd's open-files limit is $hard: Elasticsearch gets nofile $hard instead of 65535"
  printf 'services:\n  elasticsearch:\n    ulimits:\n      nofile:\n        soft: %d\n        hard: %d\n' "$hard" "$hard" >"$WORK/nofile.yml"
  FILES+=(-f "$WORK/nofile.yml")
}

# ------------------------------------------------------------ the stack ----

# dc ARGS...: docker compose on the working tree with the test env file only (no variable
# of the calling shell leaks into the stack). COMPOSE_BAKE=false: compose builds with its own
# BuildKit client, no buildx plugin needed.
dc() {
  env -i PATH="$PATH" HOME="$HOME" COMPOSE_BAKE=false ${DOCKER_HOST:+DOCKER_HOST="$DOCKER_HOST"} \
    docker compose --project-directory "$ROOT" --env-file "$ENV_FILE" "${FILES[@]}" "$@"
}

write_env() {
  # init-env.sh writes .env next to its scripts/: run it in a directory of links to the tree.
  local d="$WORK/tree" e out
  mkdir -p "$d"
  for e in "$ROOT"/* "$ROOT/.env.example"; do ln -s "$e" "$d/"; done
  out="$("$d/scripts/init-env.sh" 2>&1)" || die "init-env.sh failed: $out"
  ADMIN_PASSWORD="$(sed -n 's/.*the dashboard login is: [^ ]* \/ \([^ ]*\)$/\1/p' <<<"$out")"
  [[ -n $ADMIN_PASSWORD ]] || die "init-env.sh printed no operator password: $out"
  local keys="${TEST_PORTS[*]%%=*}"
  grep -vE "^(${keys// /|})=" "$d/.env" >"$ENV_FILE"
  printf '%s\n' "${TEST_PORTS[@]}" >>"$ENV_FILE"
  [[ -z ${NC_COMPOSE_ENV:-} ]] || printf '%s\n' "$NC_COMPOSE_ENV" >>"$ENV_FILE"
  chmod 600 "$ENV_FILE"
}

project_containers() { docker ps -aq --filter "label=com.docker.compose.project=$PROJECT"; }
service_containers() { docker ps -aq --filter "label=com.docker.compose.project=$PROJECT" --filter "label=com.docker.compose.service=$1"; }

# env_value NAME: a variable of the stack's env file.
env_value() { sed -n "s/^$1=//p" "$ENV_FILE" | tail -n 1; }

# rcli USER ARGS...: redis-cli in the Redis container as USER of deploy/redis/users.sh, its
# password (REDIS_<USER>_PASSWORD of the env file) passed through the environment, on no
# command line; USER "-" connects without authenticating. Prints the reply and the errors.
rcli() {
  local user=$1
  shift
  if [[ $user == - ]]; then
    docker exec north-cloud-redis env -u REDISCLI_AUTH redis-cli "$@" 2>&1
    return
  fi
  REDISCLI_AUTH="$(env_value "REDIS_${user^^}_PASSWORD")" \
    docker exec -e REDISCLI_AUTH north-cloud-redis redis-cli --no-auth-warning --user "$user" "$@" 2>&1
}

subscribe() {
  dc up -d --wait redis
  # Raw output (no tty): one line per element; the payloads are the lines that are JSON. As
  # the consumers' Redis user, which may subscribe and nothing more.
  rcli subscriber PSUBSCRIBE 'articles:*' 'content:*' >"$MESSAGES" &
  SUBSCRIBER=$!
  wait_for "the subscriber" 30 eval '[[ $(grep -c "^psubscribe$" "$MESSAGES") == 2 ]]'
}

build() {
  dc build >"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log" >&2; die "docker compose build failed"; }
}
# `up --wait` of every service fails on the loader ("exited (0)": compose waits for it as
# for a service, since nothing depends on its completion), so --wait names the long-running
# services (their dependencies, the migrations included, start with them) and the loader
# follows; jobs_exited_zero waits for it. Jaeger is named too (no service depends on it), so
# it is up, healthy, before the loader's documents are traced.
readonly LONG_RUNNING=(classifier publisher index-manager dashboard alertmanager prometheus jaeger)
up() {
  dc up --build --wait --wait-timeout 400 "${LONG_RUNNING[@]}" >&2
  dc up -d loader >&2
}

# wait_for WHAT SECONDS COMMAND...: polls the condition until it holds or the time is up.
wait_for() {
  local what=$1 secs=$2 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || die "$what: not within ${secs}s"
    sleep 1
  done
}

jobs_exited_zero() {
  local s c state
  for s in publisher-migrate classifier-migrate loader; do
    c="$(service_containers "$s" | head -n1)"
    [[ -n $c ]] || die "no container of $s"
    wait_for "$s exits" 120 eval "[[ \$(docker inspect -f '{{.State.Status}}' $c) == exited ]]"
    state="$(docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$c")"
    [[ $state == "exited 0" ]] || { dc logs --tail 20 "$s" >&2; die "$s: $state, want exited 0"; }
  done
}

http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }

ready() {
  local svc url
  for svc in classifier:8071 publisher:8070 index-manager:8090 dashboard:3000; do
    url="http://$(dc port "${svc%%:*}" "${svc#*:}")/ready"
    wait_for "${svc%%:*} $url answers 200" 120 eval "[[ \$(http_code '$url') == 200 ]]"
  done
}

# published: rows the publisher marked published, and rows still to publish.
outbox_counts() {
  docker exec north-cloud-postgres-publisher psql -U postgres -d publisher -tAF' ' -c \
    "SELECT count(*) FILTER (WHERE status = 'published'), count(*) FILTER (WHERE status IN ('pending', 'publishing')) FROM classified_outbox"
}
raw_pending() {
  curl -fsS --max-time 5 -H 'Content-Type: application/json' "http://127.0.0.1:23200/*_raw_content/_count" \
    -d '{"query":{"term":{"classification_status":"pending"}}}' | jq -r .count
}
received() { grep -c '^{' "$MESSAGES" || true; }
# settled: every raw document classified, every outbox row published and heard.
# settled [MIN]: nothing pending in the raw indices, nothing left to publish, at least MIN
# (default 1) outbox rows published, and every published row heard.
settled() {
  local counts min=${1:-1}
  [[ $(raw_pending) == 0 ]] || return 1
  counts="$(outbox_counts)" || return 1
  read -r published todo <<<"$counts"
  ((todo == 0 && published >= min && $(received) >= published))
}
documents_arrive() {
  wait_for "the loader's documents published and heard by the subscriber" 240 settled
  log "$(received) messages heard, $(outbox_counts | cut -d' ' -f1) outbox rows published"
}

dashboard() {
  local page token indices
  page="$(curl -fsS --max-time 5 http://127.0.0.1:23000/login)" || die "dashboard: GET /login failed"
  grep -q '<div id="app"' <<<"$page" || die "dashboard: /login is not the app's page"
  token="$(curl -fsS --max-time 10 -H 'Content-Type: application/json' \
    -d "$(jq -n --arg p "$ADMIN_PASSWORD" '{username: "admin", password: $p}')" \
    http://127.0.0.1:23000/api/index-manager/api/v1/auth/login | jq -r .token)" || die "dashboard: login through the proxy failed"
  [[ -n $token && $token != null ]] || die "dashboard: the login gave no token"
  indices="$(curl -fsS --max-time 10 -H "Authorization: Bearer $token" \
    http://127.0.0.1:23000/api/index-manager/api/v1/indices)" || die "dashboard: GET the index list through the proxy failed"
  jq -e 'tostring | test("_raw_content")' <<<"$indices" >/dev/null || die "dashboard: the index list names no raw index: $indices"
}

# Each Redis user reaches only what its role allows (docs/roles.md, "Redis users"): the publisher
# publishes and appends to the mirror streams but runs no other command; the subscriber and
# the dashboard subscribe (the subscriber step and dashboard_live show it) but never publish;
# without a user nothing runs. The publisher's own delivery, through its user, is what
# documents_arrive waited for.
# refused USER ARGS...: the command is refused for lack of permission.
refused() {
  local out
  out="$(rcli "$@")"
  [[ $out == *NOPERM* ]] || die "redis: $1 may run '${*:2}': $out"
}
redis_users() {
  local out
  out="$(rcli - PING)"
  [[ $out == *NOAUTH* ]] || die "redis: PING without a user answered: $out"
  # The probe channel: no subscriber hears these.
  out="$(rcli publisher PUBLISH publisher:probe acl-check)"
  [[ $out =~ ^[0-9]+$ ]] || die "redis: the publisher cannot PUBLISH: $out"
  out="$(rcli publisher XADD stream:articles:acl-check MAXLEN '~' 10 '*' message acl-check)"
  [[ $out =~ ^[0-9]+-[0-9]+$ ]] || die "redis: the publisher cannot XADD to a mirror stream: $out"
  out="$(rcli subscriber XRANGE stream:articles:acl-check - +)"
  [[ $out == *acl-check* ]] || die "redis: the subscriber cannot read a mirror stream: $out"
  refused publisher FLUSHALL
  refused publisher FLUSHDB
  refused publisher CONFIG SET maxmemory 1
  refused publisher CONFIG GET requirepass
  refused publisher KEYS '*'
  refused publisher DEL stream:articles:acl-check
  refused publisher SET stream:articles:acl-check x
  refused publisher XRANGE stream:articles:acl-check - +
  refused publisher ACL LIST
  refused publisher PUBLISH other:acl-check x
  local user
  for user in subscriber dashboard; do
    refused "$user" PUBLISH articles:news acl-check
    refused "$user" SPUBLISH articles:news acl-check
    refused "$user" XADD stream:articles:acl-check '*' message acl-check
    refused "$user" DEL stream:articles:acl-check
    refused "$user" FLUSHALL
    refused "$user" CONFIG GET requirepass
  done
  refused dashboard XRANGE stream:articles:acl-check - +
  out="$(rcli admin DEL stream:articles:acl-check)"
  [[ $out == 1 ]] || die "redis: admin cannot DEL: $out"
  log "redis: no user, publisher, subscriber and dashboard each refused outside their role"
}

# The dashboard's live tail subscribes as its own Redis user (DASHBOARD_REDIS_URL): a
# message published after its ready event reaches the stream. The body starts with a space
# (JSON all the same), so the subscriber step's count of '{' lines leaves it out.
dashboard_live() {
  local token live id="acl-live-$RANDOM$RANDOM"
  token="$(curl -fsS --max-time 10 -H 'Content-Type: application/json' \
    -d "$(jq -n --arg p "$ADMIN_PASSWORD" '{username: "admin", password: $p}')" \
    http://127.0.0.1:23000/api/index-manager/api/v1/auth/login | jq -r .token)" || die "dashboard live: login failed"
  curl -sSN --max-time 120 -H "Authorization: Bearer $token" http://127.0.0.1:23000/api/live >"$WORK/live.txt" 2>&1 &
  live=$!
  wait_for "dashboard live tail: its ready event (subscribed as Redis user dashboard)" 60 grep -q '^event: ready' "$WORK/live.txt"
  rcli publisher PUBLISH articles:news " {\"id\": \"$id\", \"index\": \"acl_check\", \"title\": \"acl check\"}" >/dev/null
  wait_for "dashboard live tail: the message $id" 60 grep -q "$id" "$WORK/live.txt"
  kill "$live" 2>/dev/null || true
  wait "$live" 2>/dev/null || true
}

prom() { curl -fsS --max-time 10 "http://127.0.0.1:23190/api/v1/$1" "${@:2}"; }
targets_up() {
  local t
  t="$(prom targets)" || return 1
  # Every job has a target, and every target is up.
  jq -e '[.data.activeTargets[].labels.job] | unique == ["classifier", "dashboard", "index-manager", "prometheus", "publisher"]' <<<"$t" &&
    jq -e '[.data.activeTargets[] | select(.health != "up")] | length == 0' <<<"$t" &&
    jq -e '[.data.activeTargets[] | select(.labels.job == "classifier")] | length == '"$1" <<<"$t" &&
    prom 'query?query=up' | jq -e '(.data.result | length > 0) and ([.data.result[] | select(.value[1] != "1")] | length == 0)'
}
prometheus() {
  wait_for "Prometheus: every target up" 120 targets_up 1
  local want got
  want="$(grep -c '^[[:space:]]*- alert:' "$ROOT/deploy/prometheus/alerts.yml")"
  got="$(prom rules | jq '[.data.groups[].rules[] | select(.type == "alerting")] | length')"
  [[ $got == "$want" ]] || die "Prometheus: $got alert rules loaded, alerts.yml has $want"
  # The alerts go to compose's Alertmanager (prometheus.yml's alerting block), which answers.
  wait_for "Prometheus: Alertmanager discovered" 60 \
    bash -c 'curl -fsS --max-time 10 http://127.0.0.1:23190/api/v1/alertmanagers | jq -e ".data.activeAlertmanagers | length == 1"'
  curl -fsS --max-time 10 http://127.0.0.1:23193/api/v2/status | jq -e '.cluster.status and (.config.original | contains("group_by"))' >/dev/null ||
    die "Alertmanager: /api/v2/status does not show deploy/alertmanager/alertmanager.yml"
  # Grafana's queries: each must parse and run.
  local expr n=0 res
  while IFS= read -r expr; do
    res="$(prom query --data-urlencode "query=$expr")" || die "Prometheus: the Grafana query does not run: $expr"
    jq -e '.status == "success"' <<<"$res" >/dev/null || die "Prometheus: the Grafana query failed: $expr: $res"
    n=$((n + 1))
  done < <(jq -r '.. | objects | select(has("expr")) | .expr' "$ROOT"/deploy/grafana/dashboards/*.json)
  ((n > 0)) || die "no queries found in deploy/grafana/dashboards"
  log "Prometheus: $want alert rules loaded, $n Grafana queries run"
}

# The spans of one document's trace (docs/architecture.md#tracing), by service.
readonly TRACE_SPANS='{"classifier.claim.document": "classifier", "classifier.classify": "classifier",
  "classifier.outbox.row": "classifier", "publisher.publish": "publisher"}'
# document_trace URL: prints the first trace of the classifier's newest document traces that
# has every span of TRACE_SPANS, each from its service; fails while there is none.
document_trace() {
  local traces
  traces="$(curl -fsS --max-time 10 "$1/api/traces?service=classifier&operation=classifier.claim.document&limit=50")" || return 1
  jq -ec --argjson want "$TRACE_SPANS" '
    [.data[] | . as $t
      | [.spans[] | {name: .operationName, service: $t.processes[.processID].serviceName}] as $spans
      | select($want | to_entries | all(.key as $n | .value as $s | $spans | any(.name == $n and .service == $s)))
      | {traceID, spans: [.spans | sort_by(.startTime)[] | "\(.operationName) [\($t.processes[.processID].serviceName)]"]}]
    | first // empty' <<<"$traces"
}
jaeger() {
  local url trace
  url="http://$(dc port jaeger 16686)"
  # The services export in batches (every few seconds): wait for the spans to arrive.
  wait_for "Jaeger ($url): a loaded document's trace with the spans of $TRACE_SPANS" 90 document_trace "$url"
  trace="$(document_trace "$url")"
  log "Jaeger: trace $(jq -r .traceID <<<"$trace"): $(jq -r '.spans | join(", ")' <<<"$trace")"
}

# metric CONTAINER PORT NAME: the sum of a counter on one replica.
metric() {
  docker exec "$1" wget -qO- "http://127.0.0.1:$2/metrics" | awk -v m="$3" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%d\n", s }'
}
scale() {
  dc up -d --wait --wait-timeout 300 --scale classifier=3 --scale publisher=2 "${LONG_RUNNING[@]}" >&2
  local -a cls
  mapfile -t cls < <(service_containers classifier)
  ((${#cls[@]} == 3)) || die "scale: ${#cls[@]} classifier containers, want 3"
  (($(service_containers publisher | wc -l) == 2)) || die "scale: want 2 publisher containers"
  local -A before
  local c
  for c in "${cls[@]}"; do before[$c]="$(metric "$c" 8071 classifier_documents_processed_total)"; done
  local published_before
  published_before="$(outbox_counts | cut -d' ' -f1)" || die "scale: the outbox could not be read"
  # Large enough that one replica cannot drain it before the others poll. -refresh makes
  # the load count as pending as soon as the loader exits: without it the first load's
  # settled state could be read again before the index's refresh showed the second one.
  dc run --rm --no-deps loader /app/loader -count 2000 -refresh >&2 || die "the second load failed"
  wait_for "the second load published and heard" 240 settled "$((published_before + 1))"
  local working=0 delta
  for c in "${cls[@]}"; do
    delta=$(($(metric "$c" 8071 classifier_documents_processed_total) - before[$c]))
    log "classifier ${c:0:12}: $delta documents of the second load"
    ((delta > 0)) && working=$((working + 1))
  done
  ((working >= 2)) || die "scale: $working of 3 classifiers classified the second load, want 2 or more"
  for c in $(service_containers publisher); do
    log "publisher ${c:0:12}: $(metric "$c" 8070 classifier_outbox_published_total) messages published"
  done
  local total distinct
  total="$(received)"
  distinct="$(grep '^{' "$MESSAGES" | jq -r '[.index, .id, .version] | tostring' | sort -u | wc -l)"
  log "subscriber: $total messages, $distinct distinct (index, id, version)"
  ((total == distinct)) || die "scale: $((total - distinct)) messages published twice"
  wait_for "Prometheus: the 3 classifier replicas up" 90 targets_up 3
}

down() {
  dc down -v --remove-orphans >&2
  [[ -z $(project_containers) ]] || die "down -v left containers: $(project_containers | tr '\n' ' ')"
  local vols
  vols="$(docker volume ls -q --filter "label=com.docker.compose.project=$PROJECT")"
  [[ -z $vols ]] || die "down -v left volumes: $vols"
}

cleanup() {
  [[ -n ${SUBSCRIBER:-} ]] && kill "$SUBSCRIBER" 2>/dev/null
  if [[ -n ${ENV_FILE:-} && -s $ENV_FILE && -n $(project_containers 2>/dev/null) ]]; then
    log "cleaning up: docker compose down -v"
    dc logs --tail 30 >"$WORK/logs.txt" 2>&1 || true
    dc down -v --remove-orphans >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
}

stack() {
  step "redis subscriber" subscribe
  step "docker compose up --build --wait" up
  step "migrations and loader exited 0" jobs_exited_zero
  step "/ready of every service" ready
  step "documents reach the subscriber" documents_arrive
  step "redis users: each only its role" redis_users
  step "dashboard login and index list" dashboard
  step "live tail as redis user dashboard" dashboard_live
  step "prometheus targets, rules, queries" prometheus
  step "jaeger: a document's trace" jaeger
  step "scale classifier=3 publisher=2" scale
  step "docker compose down -v" down
}

# prepare: what a run needs before the Go and npm builds, done while other work uses the
# CPU; whatever fails here is done (and reported) again by the run proper.
prepare() {
  WORK="$(mktemp -d)"
  trap 'rm -rf "$WORK"' EXIT
  ( engine_up && compose_install && images stand-ins ) || log "preparation failed (the run proper retries)"
}

main() {
  [[ ${1:-} != --prepare ]] || { prepare; return 0; }
  local start=$SECONDS
  WORK="$(mktemp -d)"
  ENV_FILE="$WORK/test.env"
  MESSAGES="$WORK/messages.txt"
  trap cleanup EXIT
  command -v jq >/dev/null && command -v curl >/dev/null || die "needs jq and curl"
  step "docker engine" engine_up
  step "docker compose plugin" compose_install
  step "images (stand-ins when offline)" images
  [[ -z $(project_containers) ]] || die "a $PROJECT compose stack exists already (docker compose down, then run this again)"
  step "env file (scripts/init-env.sh)" write_env
  step "docker compose build" build
  ((SECONDS - start <= SETUP_BUDGET)) || die "setup took $((SECONDS - start))s, over NC_COMPOSE_SETUP_BUDGET=${SETUP_BUDGET}s"
  local t0=$SECONDS rc=0
  # The budget bounds the stack's part: a subshell killed at the deadline.
  (stack; print_steps) &
  local pid=$!
  ( sleep "$BUDGET" && kill -TERM "$pid" 2>/dev/null && printf 'compose-test: FAIL: over NC_COMPOSE_BUDGET=%ss\n' "$BUDGET" >&2 ) &
  local watchdog=$!
  wait "$pid" || rc=$?
  kill "$watchdog" 2>/dev/null || true
  wait "$watchdog" 2>/dev/null || true
  print_steps
  log "setup $((t0 - start))s, stack $((SECONDS - t0))s, total $((SECONDS - start))s"
  ((rc == 0)) || { [[ -s $WORK/logs.txt ]] && tail -n 60 "$WORK/logs.txt" >&2; die "the stack checks failed (exit $rc)"; }
  log "PASS"
}

main "$@"
