#!/usr/bin/env bash
# fuzz.sh - the fuzz stage of scripts/test.sh (issue 12):
#  1. every Go native fuzz target of the workspace (func FuzzXxx in a
#     _test.go file), each for a short bounded run (FUZZTIME, default 10s)
#     from its committed seed corpus (testdata/fuzz/FuzzXxx);
#  2. schemathesis (from PyPI, pinned, in a venv under the cache directory)
#     over each service's served OpenAPI document, against the real
#     binaries with fresh databases and a valid token: a bounded number of
#     examples per operation (SCHEMATHESIS_EXAMPLES, default 25), all checks.
#     The dashboard server's own API (its Prometheus proxy, in front of a
#     real Prometheus from Debian's package scraping the classifier) is
#     fuzzed the same way. FUZZ_SERVICES picks the APIs (default: all four).
# Any fuzz failure, 5xx or schema violation fails the run. Expects the
# services of scripts/services.sh (it runs `up` and `env` itself).
#
# `scripts/fuzz.sh --prepare` only installs schemathesis (downloads, little
# CPU): scripts/test.sh runs it in the background while the Go stages run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOTOOLCHAIN=local
cache="${NC_CACHE_DIR:-$HOME/.cache/north-cloud}"
fuzztime="${FUZZTIME:-10s}"
examples="${SCHEMATHESIS_EXAMPLES:-25}"
schemathesis_version=4.32.5
status=0

venv="$cache/schemathesis-venv"
install_schemathesis() {
  if ! "$venv/bin/st" --version 2>/dev/null | grep -q "$schemathesis_version"; then
    echo "-- installing schemathesis $schemathesis_version into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "schemathesis==$schemathesis_version"
  fi
}
if [ "${1:-}" = --prepare ]; then
  install_schemathesis
  exit 0
fi

"$root/scripts/services.sh" up >&2
eval "$("$root/scripts/services.sh" env)"

# ---- 1. Go native fuzz targets ------------------------------------------------
# fuzz_one runs one target, each module on its own, in the configuration of
# scripts/build.sh (CGO_ENABLED=0, -trimpath), so the standard library the
# vet stage compiled serves it (fuzzing instruments only the other packages).
# A real finding writes its failing input under testdata/fuzz and says so.
#
# `go test -fuzz` can also end a clean run with a bare "context deadline
# exceeded" when -fuzztime runs out: a race in Go's fuzzing coordinator
# (golang/go#75804, fixed in Go 1.27; this project builds with 1.26) lets
# the deadline that ends the run escape as the target's failure, more often
# on a loaded machine. Such a run fuzzed for its whole time and found
# nothing, so it counts as a pass, with a note, when all of these hold: the
# output names no failing input, it shows executions, and no new file
# appeared in the target's corpus directory. Anything else fails.
fuzz_one() {
  local m=$1 pkg=$2 target=$3 out corpus before after
  corpus="$m/${pkg#./}/testdata/fuzz/$target"
  before=$(ls "$corpus" 2>/dev/null | sort || true)
  if out=$(cd "$m" && CGO_ENABLED=0 GOWORK=off go test -trimpath -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime" -fuzzminimizetime=50x "$pkg" 2>&1); then
    printf '%s\n' "$out" | tail -n 3 >&2
    return 0
  fi
  printf '%s\n' "$out" >&2
  after=$(ls "$corpus" 2>/dev/null | sort || true)
  if grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written to' <<<"$out" &&
    grep -Eq 'execs: [1-9]' <<<"$out" && [ "$before" = "$after" ]; then
    echo "-- $target: passed; the failure above is the Go fuzz coordinator's deadline race (golang/go#75804): no failing input, no new corpus file" >&2
    return 0
  fi
  return 1
}

# Minimizing each new interesting input is bounded by a count of runs, not
# time: a minimization still running when -fuzztime ends fails the target
# with "context deadline exceeded" on a loaded machine, a false alarm.
modules=$(sed -n 's#^[[:space:]]*\./\(.*\)$#\1#p' go.work)
for m in ${FUZZ_GO_MODULES:-$modules}; do
  while IFS= read -r file; do
    pkg="./$(dirname "${file#"$m"/}")"
    for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
      echo "-- go fuzz $m $pkg $target ($fuzztime)" >&2
      fuzz_one "$m" "$pkg" "$target" || status=1
    done
  done < <(grep -l --include='*_test.go' -r '^func Fuzz' "$m" 2>/dev/null || true)
done

# ---- 2. schemathesis against the running services --------------------------------
install_schemathesis

work=$(mktemp -d)
id="ncfuzz$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
pids=()
databases=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for d in "${databases[@]}"; do psql -X -q "$POSTGRES_ADMIN_URL" -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1 || true; done
  curl -s -X DELETE "$ELASTICSEARCH_URL/${id}*" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

db_url() { python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$POSTGRES_ADMIN_URL" "$1"; }
with_user() { python3 -c 'import sys, urllib.parse as u; p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(netloc=sys.argv[2] + ":" + sys.argv[3] + "@" + p.hostname + ":" + str(p.port))))' "$1" "$2" "$3"; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
new_db() {
  local name="${id}_$1"
  psql -X -q -v ON_ERROR_STOP=1 "$POSTGRES_ADMIN_URL" -c "CREATE DATABASE $name" >/dev/null
  databases+=("$name")
  db_url "$name"
}

# As scripts/build.sh builds them (each module on its own, CGO_ENABLED=0,
# -trimpath), as scripts/test.sh vets them before this stage: the packages
# are compiled already.
echo "-- building the services into $work" >&2
"$root/scripts/build.sh" "$work"

# start NAME ADDRVAR ENV... : runs a binary on a free port until /ready and
# sets addr (not in a subshell, so that cleanup knows its pid).
addr=
start() {
  local name=$1 addrvar=$2 port
  shift 2
  port=$(free_port)
  env "$@" "$addrvar=127.0.0.1:$port" LOG_FORMAT=text LOG_LEVEL=warn "$work/$name" >"$work/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 120); do
    if curl -sf "http://127.0.0.1:$port/ready" >/dev/null; then
      addr="127.0.0.1:$port"
      return 0
    fi
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.5
  done
  echo "$name did not become ready:" >&2
  cat "$work/$name.log" >&2
  return 1
}

publisher_db=$(new_db publisher)
classifier_db=$(new_db classifier)
index_manager_db=$(new_db index_manager)
password="pw-$id"
hash=$(printf '%s' "$password" | "$work/index-manager" hash-password)

start publisher PUBLISHER_HTTP_ADDR PUBLISHER_DATABASE_URL="$publisher_db"
publisher=$addr
start classifier CLASSIFIER_HTTP_ADDR CLASSIFIER_DATABASE_URL="$classifier_db" \
  CLASSIFIER_OUTBOX_DATABASE_URL="$(with_user "$publisher_db" classifier classifier)" \
  CLASSIFIER_INDEX_PATTERN="${id}*_raw_content" CLASSIFIER_ID="$id"
classifier=$addr
start index-manager INDEX_MANAGER_HTTP_ADDR INDEX_MANAGER_DATABASE_URL="$index_manager_db" \
  INDEX_MANAGER_ADMIN_USER=fuzzer INDEX_MANAGER_ADMIN_PASSWORD_HASH="$hash"
index_manager=$addr

# One token for the three services (one shared audience), from the login.
token=$(curl -sf -X POST "http://$index_manager/api/v1/auth/login" -H 'Content-Type: application/json' \
  -d "{\"username\":\"fuzzer\",\"password\":\"$password\"}" | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')

# The dashboard server in front of a real Prometheus scraping the
# classifier, with a stand-in build (its API does not serve the app).
if ! command -v prometheus >/dev/null; then
  echo "prometheus is missing (apt-get install prometheus): the dashboard server's proxy needs one" >&2
  exit 1
fi
prom_port=$(free_port)
printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: classifier\n    static_configs:\n      - targets: ["%s"]\n' "$classifier" >"$work/prometheus.yml"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus" \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$work/prometheus.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$prom_port/-/ready" >/dev/null && break; sleep 0.5; done
mkdir -p "$work/dist" && echo '<html></html>' >"$work/dist/index.html"
# The live tail on the harness's Redis, its streams ended after 2s so that
# each fuzzed request of GET /api/live completes.
start dashboard DASHBOARD_ADDR DASHBOARD_DIST="$work/dist" PROMETHEUS_URL="http://127.0.0.1:$prom_port" \
  DASHBOARD_REDIS_URL="$REDIS_URL" DASHBOARD_LIVE_MAX_DURATION=2s \
  CLASSIFIER_URL="http://$classifier" PUBLISHER_URL="http://$publisher" INDEX_MANAGER_URL="http://$index_manager"
dashboard=$addr

# Each API's document: the services serve theirs at /api/v1/openapi.json,
# the dashboard server at /api/openapi.json.
declare -A docs=([publisher]=/api/v1/openapi.json [classifier]=/api/v1/openapi.json
  [index-manager]=/api/v1/openapi.json [dashboard]=/api/openapi.json)
declare -A addrs=([publisher]=$publisher [classifier]=$classifier [index-manager]=$index_manager [dashboard]=$dashboard)
# The APIs are fuzzed side by side (each schemathesis run is one Python
# process that mostly waits on its service): about a minute instead of the
# sum of the four runs. Each run's output is printed whole when all are done.
names=()
st_pids=()
for name in ${FUZZ_SERVICES:-publisher classifier index-manager dashboard}; do
  set -- "$name" "${addrs[$name]}"
  curl -sf -H "Authorization: Bearer $token" "http://$2${docs[$1]}" >"$work/$1.openapi.json"
  # From a scratch directory of its own: schemathesis keeps its example
  # database (.schemathesis/) in the working directory, not in the repository.
  mkdir -p "$work/st-$1"
  (cd "$work/st-$1" && exec "$venv/bin/st" --config-file "$root/scripts/schemathesis.toml" run "$work/$1.openapi.json" --url "http://$2" \
    -H "Authorization: Bearer $token" --checks all --max-examples "$examples" \
    --seed 1 --no-color --request-timeout 30) >"$work/st-$1.out" 2>&1 &
  names+=("$1")
  st_pids+=($!)
done
for i in "${!names[@]}"; do
  name=${names[$i]}
  st_status=0
  wait "${st_pids[$i]}" || st_status=$?
  echo "-- schemathesis $name (http://${addrs[$name]}${docs[$name]}, $examples examples per operation, all checks): exit $st_status" >&2
  cat "$work/st-$name.out" >&2
  [ "$st_status" = 0 ] || status=1
  if grep -qi 'panic' "$work/$name.log"; then
    echo "$name logged a panic:" >&2
    grep -i -A5 'panic' "$work/$name.log" >&2
    status=1
  fi
done
exit $status
