#!/usr/bin/env bash
# test.sh - every test of the project against the real services: starts
# PostgreSQL, Redis and Elasticsearch (scripts/services.sh), checks formatting
# and vet, then runs `go test -race` over every Go module, the end-to-end test
# included, and prints one summary. Under CI=true a test that skipped fails the
# run: CI never passes by skipping.
#
# `scripts/test.sh --stage compose` runs only the services and the compose stage (the
# container stack run for real, scripts/compose-test.sh), with its preparation.
set -euo pipefail
only=
case "${1:-}" in
  --stage) only=${2:?--stage needs a name (compose)}; [ "$only" = compose ] || { echo "unknown stage: $only" >&2; exit 2; } ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--stage compose]" >&2; exit 2 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOTOOLCHAIN=local
cache="${NC_CACHE_DIR:-$HOME/.cache/north-cloud}"
start=$(date +%s)

# Each stage prints its seconds when the next begins, and the run ends with
# all of them, so a slow stage is seen at once. Beside the seconds, how busy
# the machine's CPUs were meanwhile (every process, the background stages'
# included): a stage near 100% is bound by CPU, and running more beside it
# only stretches both; one far below it mostly waits, and work can go beside it.
stage_name= stage_start=$start stage_cpu= timings=()
# cpu_ticks prints the machine's busy and total CPU ticks since boot.
cpu_ticks() {
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
  echo "$((user + nice + system + irq + softirq + steal)) $((user + nice + system + idle + iowait + irq + softirq + steal))"
}
# busy_since TICKS prints the share of the CPUs that was busy since TICKS.
busy_since() {
  local b0 t0 b1 t1
  read -r b0 t0 <<<"$1"
  read -r b1 t1 <<<"$(cpu_ticks)"
  [ "$t1" -gt "$t0" ] && echo "$((100 * (b1 - b0) / (t1 - t0)))%" || echo "-"
}
step() {
  stage_end
  stage_name=$*
  stage_start=$(date +%s)
  stage_cpu=$(cpu_ticks)
  printf '\n== %s\n' "$*" >&2
}
stage_end() {
  [ -n "$stage_name" ] || return 0
  local secs=$(($(date +%s) - stage_start)) busy
  busy=$(busy_since "$stage_cpu")
  timings+=("$(printf '%6ss  %4s busy  %s' "$secs" "$busy" "$stage_name")")
  printf -- '-- %s: %ss, CPUs %s busy\n' "$stage_name" "$secs" "$busy" >&2
  stage_name=
}

step "services"
"$root/scripts/services.sh" up
eval "$("$root/scripts/services.sh" env)"

modules=$(sed -n 's#^[[:space:]]*\./\(.*\)$#\1#p' go.work)

# Compose stage (scripts/compose-test.sh): the container stack of docker-compose.yml run
# for real, within a budget of 600 s (NC_COMPOSE_SETUP_BUDGET for the engine, the images and
# `docker compose build`, NC_COMPOSE_BUDGET for the stack). Its slow part on a fresh machine,
# the engine and (without an image registry) the stand-in images, is made in the background
# from here on (`--prepare`: downloads and package installs, little CPU, except the Jaeger
# stand-in's first `go build`, niced: about 200 s of CPU with cold Go caches, none once it is
# in NC_CACHE_DIR), and says it has ended by a file ($compose_prep_log.done), which the
# stage, begun in the background after the race stage, waits for; the stage itself then
# builds the services' binaries with the Go build cache the stages before it filled and
# packs them. Outside CI it skips where no Docker engine can be had; under CI=true it fails.
compose_prep_log=$(mktemp)
("$root/scripts/compose-test.sh" --prepare >"$compose_prep_log" 2>&1 || true; touch "$compose_prep_log.done") &
compose_prep_pid=$!
compose_stage() {
  wait "$compose_prep_pid" || true
  compose_stage_after_prep
}
# compose_stage_after_prep is the stage once the preparation has ended.
compose_stage_after_prep() {
  echo "   compose preparation: $(grep -c 'offline images:.* built\|imported' "$compose_prep_log") images built in the background" >&2
  sed 's/^/   compose-prepare: /' "$compose_prep_log" | tail -n 12 >&2
  rm -f "$compose_prep_log" "$compose_prep_log.done"
  "$root/scripts/compose-test.sh"
}
if [ "$only" = compose ]; then
  step "compose: the container stack run for real (budget 600s)"
  status=0
  compose_stage || status=1
  stage_end
  printf '%s\n' "${timings[@]}" >&2
  exit $status
fi

# What the later stages install (Debian's prometheus and chromium,
# schemathesis, the dashboard's npm packages) is fetched in the background while the Go stages
# use the CPU; each stage still installs what is missing itself, so a failed
# preparation only costs time. RUNLEVEL=1 keeps the prometheus package's
# maintainer scripts from starting a daemon on :9090.
prepare() {
  local sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
  local pkgs=()
  command -v promtool >/dev/null && command -v prometheus >/dev/null || pkgs+=(prometheus)
  command -v amtool >/dev/null || pkgs+=(prometheus-alertmanager)
  [ -x /usr/bin/chromium ] || pkgs+=(chromium)
  if [ ${#pkgs[@]} -gt 0 ]; then
    $sudo apt-get -o DPkg::Lock::Timeout=600 -q update &&
      $sudo env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -q -y \
        install --no-install-recommends "${pkgs[@]}"
  fi
  # schemathesis for the fuzz stage (a venv from PyPI): a minute of downloads
  # on a fresh machine that the fuzz stage used to wait for.
  "$root/scripts/fuzz.sh" --prepare || echo "schemathesis install failed; the fuzz stage tries again" >&2
  cd "$root/dashboard" &&
    if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
      npm ci --no-audit --no-fund
    fi
}
prep_log=$(mktemp)
(prepare) >"$prep_log" 2>&1 &
prep_pid=$!
# prepared waits for the background preparation (once) and shows its output.
prepared() {
  [ -n "$prep_pid" ] || return 0
  wait "$prep_pid" || echo "background preparation failed; the stages install what they need" >&2
  prep_pid=
  sed 's/^/   prepare: /' "$prep_log" | tail -n 20 >&2
}

# go vet runs on each module as it stands alone, in the project's one build
# configuration for binaries outside the race detector (scripts/build.sh:
# GOWORK=off, CGO_ENABLED=0, -trimpath), as the module stage below builds it.
# Every non-race build after these stages uses it too (the binaries the tests
# start, the fuzz stage's services, the classifier eval, the dashboard's
# bin/, the container images) and finds its packages compiled here: on a new
# machine each package is compiled twice in all (here, and for the race
# detector), not once per set of flags. The code vetted is the same; the
# workspace build is type-checked by go test.
nonrace=(env CGO_ENABLED=0 GOWORK=off)
step "gofmt and go vet (GOWORK=off)"
unformatted=$(gofmt -l $modules)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
# `go mod tidy -diff` (the module stage below) reads go.mod, go.sum and the
# module cache, and compiles nothing: it runs beside vet, which uses the CPU.
tidy_log=$(mktemp)
(for m in $modules; do
  (cd "$m" && GOWORK=off go mod tidy -diff) || echo "module $m: go mod tidy -diff would change go.mod or go.sum (above)"
done) >"$tidy_log" 2>&1 &
tidy_pid=$!
for m in $modules; do
  (cd "$m" && "${nonrace[@]}" go vet -trimpath ./...) || { wait "$tidy_pid" || true; exit 1; }
done

status=0
# Each module stands alone: it builds outside the workspace (its go.mod
# requires what it imports, the local infrastructure module through a
# replace) and `go mod tidy` would change nothing. -diff only prints. The
# build finds every package compiled by vet; tidy ran beside vet.
step "modules: GOWORK=off go build, go mod tidy -diff"
for m in $modules; do
  (cd "$m" && "${nonrace[@]}" go build -trimpath ./...) ||
    { echo "module $m does not stand alone (go build above)" >&2; status=1; }
done
wait "$tidy_pid" || status=1
cat "$tidy_log" >&2
! grep -q 'go mod tidy -diff would change' "$tidy_log" || status=1
rm -f "$tidy_log"

# ---- Prometheus configuration and alert rules (promtool) ---------------------
# The e2e tests run the prometheus binary, so this comes before them.
# Debian's prometheus package ships promtool (and the prometheus binary the
# Prometheus end-to-end test in e2e/ runs). RUNLEVEL=1 keeps its maintainer
# scripts from starting a prometheus daemon on :9090.
prepared
step "promtool: Prometheus configs, alert rules and rule unit tests; amtool: the Alertmanager config"
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null || ! command -v amtool >/dev/null; then
  echo "installing Debian's prometheus and prometheus-alertmanager packages (promtool, amtool)" >&2
  { apt-get -o DPkg::Lock::Timeout=600 -q update &&
    RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -q -y \
      install --no-install-recommends prometheus prometheus-alertmanager; } >&2 || status=1
fi
promtool check config deploy/prometheus/prometheus.yml || status=1
promtool check config deploy/prometheus/prometheus.native.yml || status=1
promtool check rules deploy/prometheus/alerts.yml || status=1
promtool test rules deploy/prometheus/alerts_test.yml || status=1
amtool check-config deploy/alertmanager/alertmanager.yml || status=1

gotestsum="$cache/bin/gotestsum"
if [ ! -x "$gotestsum" ]; then
  step "installing gotestsum (once)"
  mkdir -p "$cache/bin"
  GOBIN="$cache/bin" "${nonrace[@]}" go install -trimpath gotest.tools/gotestsum@v1.13.0
fi

# ---- stages in the background ------------------------------------------------
# The machine has 2 cores. The stages from here on that mostly wait (on the
# services, a browser, containers, the failover tests' timers) run beside the
# ones that use the CPU. A background stage's output goes to a file, printed
# whole when the stage is joined; its own seconds, and when it began, go into
# the closing summary; its failure fails the run, with its output shown.
jobs_dir=$(mktemp -d)
json=$jobs_dir/go-test.json
trap 'rm -rf "$jobs_dir"; rm -f "$prep_log" "$compose_prep_log" "$compose_prep_log.done"' EXIT
declare -A job_pid job_label
# background NAME LABEL COMMAND...: runs COMMAND (a function or a program) in
# a subshell in the background, its output in $jobs_dir/NAME.log; when it
# ends it writes its seconds, when it began (seconds into the run) and its
# status to $jobs_dir/NAME.done.
background() {
  local name=$1 label=$2
  shift 2
  job_label[$name]=$label
  printf '\n== %s (begins in the background, at %ss)\n' "$label" "$(($(date +%s) - start))" >&2
  (
    began=$(date +%s) rc=0
    "$@" >"$jobs_dir/$name.log" 2>&1 </dev/null || rc=$?
    echo "$(($(date +%s) - began)) $((began - start)) $rc" >"$jobs_dir/$name.done"
    exit "$rc"
  ) &
  job_pid[$name]=$!
}
# join NAME: waits for a background stage, prints its output and its seconds,
# and records them for the summary; returns its status.
join() {
  local name=$1 rc=0 secs='?' began='?' note=
  wait "${job_pid[$name]}" || rc=$?
  [ -f "$jobs_dir/$name.done" ] && read -r secs began _ <"$jobs_dir/$name.done"
  printf '\n== %s (ran in the background)\n' "${job_label[$name]}" >&2
  cat "$jobs_dir/$name.log" >&2
  [ "$rc" = 0 ] || note=", FAILED (status $rc)"
  timings+=("$(printf '%6ss  %4s       %s [background, from %ss%s]' "$secs" "" "${job_label[$name]}" "$began" "$note")")
  printf -- '-- %s: %ss (in the background, from %ss)%s\n' "${job_label[$name]}" "$secs" "$began" "$note" >&2
  return "$rc"
}

# Classification quality (docs/classification.md). The default rules alone,
# on the labeled set written beside them, held to their floors (recall >= 0.85
# and precision >= 0.90 per topic, crime false positives <= 2%, < 10% of
# articles without a topic): a regression check of the rules, not evidence of
# quality. Then the shipped defaults (rules and lexicon) and classifier train
# (5-fold cross-validation, TestSectionEvalTrained, held to its floors here)
# on the labelled news sets in NEWS_DATA_DIR, printed for the record (go test
# holds the defaults to their floors: TestSectionEvalShippedDefaults).
# Nothing is written; a scratch database is made and dropped for each.
# The eval is CPU alone (the training: minutes of one goroutine's arithmetic per
# set), no timer in it: it runs in the background from the race stage on, niced
# 10 below the run (5 below the race stage's other packages), so that it takes
# the CPU the stages beside it leave idle rather than theirs.
eval_stage() {
  local rc=0 eval_bin
  (cd classifier && env -u CLASSIFIER_RULE_MATCHER -u CLASSIFIER_RULE_STEMMING -u CLASSIFIER_RULE_SCORING \
    "${nonrace[@]}" go run -trimpath ./cmd/classifier eval -rules migrations -model none -floors -misses 10 testdata/eval/labels.ndjson) || rc=1
  if [ -n "${NEWS_DATA_DIR:-}" ]; then
    eval_bin=$(mktemp -d)/classifier
    (cd classifier && "${nonrace[@]}" go build -trimpath -o "$eval_bin" ./cmd/classifier &&
      for set in news-short-dev news-full-dev; do
        "$eval_bin" eval -rules migrations -misses 0 "$NEWS_DATA_DIR/$set.ndjson.gz" || exit 1
      done &&
      "${nonrace[@]}" go test -trimpath -count=1 -timeout 20m -v -run '^TestSectionEvalTrained$' ./cmd/classifier) || rc=1
    rm -rf "$(dirname "$eval_bin")"
  elif [ "${CI:-}" = true ]; then
    echo "NEWS_DATA_DIR is not set: CI needs the labelled news sets" >&2
    rc=1
  else
    echo "NEWS_DATA_DIR is not set: the labelled news evaluation is skipped (docs/classification.md)" >&2
  fi
  return $rc
}
background eval "classifier eval: the rules on their labeled set (floors); the defaults and training on labelled news" \
  nice -n 10 bash -c "$(declare -p nonrace); $(declare -f eval_stage); eval_stage"

step "go test -race (all modules)"
# Two go test runs side by side from the workspace root: the end-to-end
# package (./e2e/...), the longest by far (minutes, mostly waiting on the
# services and the binaries it starts, whose timers it measures), and every
# other package of every module, niced 5 below it, three at a time (-p 3, not
# the default two for 2 cores: most of them wait on the services too). With one
# go test at -p 2, the end-to-end package held one slot for its whole run and
# every other package queued behind the other; with one at -p 4 the others'
# compiles and CPU-heavy tests slowed the end-to-end package, which sets the
# stage's length. NC_TEST_PARALLEL changes the -p of the others. The
# end-to-end tests themselves run four at a time (-parallel 4, not the
# default of GOMAXPROCS, two): most of their time is spent waiting through
# the outages they inject (a database down for two minutes, a node killed,
# the soak's faults), and the four longest take two minutes each; at two at
# a time the package took 472 s, at four 425 s on a machine twice as loaded
# (2026-11-28). NC_E2E_PARALLEL changes it.
# -trimpath: the compiled packages' cache keys then do not hold the clone's
# directory, so a new clone on this machine reuses what an earlier run
# compiled for the race detector (the cluster stage builds with the same flags).
# The cluster tests (TestCluster*) run in the cluster stage below, and
# TestSectionEvalTrained (training 130 models: minutes under the race
# detector, one goroutine's arithmetic) in the eval stage.
race=(go test -race -trimpath -count=1)
race_skip='^TestCluster|^TestSectionEvalTrained$'
pkgs=()
for m in $modules; do
  [ "$m" = e2e ] || pkgs+=("./$m/...")
done
"${race[@]}" -parallel "${NC_E2E_PARALLEL:-4}" -timeout 20m -json -skip "$race_skip" ./e2e/... >"$jobs_dir/race-e2e.json" &
race_e2e_pid=$!
nice -n 5 "${race[@]}" -p "${NC_TEST_PARALLEL:-3}" -timeout 20m -json -skip "$race_skip" "${pkgs[@]}" >>"$json" || status=1
wait "$race_e2e_pid" || status=1
cat "$jobs_dir/race-e2e.json" >>"$json"

# Dashboard (dashboard/): type check, unit tests, production build, and the
# browser end-to-end test, which starts its own copies of the services from
# bin/ (its own databases and index prefix on the single-node services) and
# drives Debian's chromium (installed here when missing). It runs in the
# background: its type check, unit tests and builds (CPU) beside the cluster
# stage (which mostly waits, on an Elasticsearch and a Redis of its own), its
# browser test once the cluster stage has ended (the cluster tests publish
# thousands of messages on the shared Redis, whose channels the live tail
# under test shows) and the fuzz stage. Once dist/ is built it says so
# ($jobs_dir/dist-ready), and the compose stage, which packs dist/, begins.
dashboard_checks() {
  cd "$root/dashboard" || return 1
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund || return 1
  fi
  if [ ! -x /usr/bin/chromium ]; then
    local sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium ||
      { $sudo apt-get update -q && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } || return 1
  fi
  "$root/scripts/build.sh" || return 1
  npm run typecheck || return 1
  npm run test:unit || return 1
  npm run build || return 1
  touch "$jobs_dir/dist-ready"
  # After the fuzz stage too: schemathesis drives an index-manager with an
  # admin token over the same Elasticsearch, and a run of the browser test
  # beside it lost one of its raw indices mid-test (2026-11-28).
  until [ -e "$jobs_dir/clusters-done" ] && [ -e "$jobs_dir/fuzz-done" ]; do kill -0 $$ 2>/dev/null || return 1; sleep 2; done
  echo "dashboard: the browser test begins after the cluster and fuzz stages, $(($(date +%s) - start))s into the run"
  npm run test:e2e || return 1
}
prepared
background dashboard "dashboard: typecheck, unit, build, e2e (the e2e after the cluster and fuzz stages)" dashboard_checks

# Compose stage (scripts/compose-test.sh): the container stack run for real, mostly waiting
# on containers. It packs the services' binaries (the Go build cache filled by the stages
# before) and the dashboard's dist/, so it begins once the dashboard stage has built dist/
# (or ended without it: compose-test.sh then builds dist/ itself).
compose_after_dist() {
  until [ -e "$compose_prep_log.done" ]; do kill -0 $$ 2>/dev/null || return 1; sleep 2; done
  until [ -e "$jobs_dir/dist-ready" ] || [ -e "$jobs_dir/dashboard.done" ]; do kill -0 $$ 2>/dev/null || return 1; sleep 2; done
  echo "   compose: began after its preparation and the dashboard's build, $(($(date +%s) - start))s into the run" >&2
  compose_stage_after_prep
}
background compose "compose: the container stack run for real (budget 600s)" compose_after_dist

# Fuzz stage (scripts/fuzz.sh): every Go native fuzz target for a short
# bounded run from its committed seeds, then schemathesis over each
# service's OpenAPI document against the real binaries (all checks; a 5xx
# or a schema violation fails). The fuzz targets run for a fixed time
# whatever CPU they get (fewer inputs, never a failure); the services it
# starts have their own databases and index prefix on the single-node
# services. It runs in the background beside the cluster stage, which mostly
# waits on its own Elasticsearch and Redis nodes.
# FUZZTIME: 6 s a target here (scripts/fuzz.sh's own default is 10 s);
# every target runs, each from its committed corpus.
fuzz_stage() {
  local rc=0
  FUZZTIME=${FUZZTIME:-6s} "$root/scripts/fuzz.sh" || rc=1
  touch "$jobs_dir/fuzz-done"
  return $rc
}
background fuzz "fuzz: Go native fuzz targets, schemathesis against the running services" fuzz_stage

# Cluster stage (docs/scaling.md): a 3-node Elasticsearch and a Redis Cluster of 3 masters
# with replicas start beside the single-node services (scripts/services.sh, NC_ES_NODES=3,
# NC_REDIS_CLUSTER=1); the end-to-end delivery test runs on the Elasticsearch cluster, and the
# failover tests kill a node of each cluster mid-drain (TestCluster*, which need the cluster
# settings and fail without a cluster under CI). The clusters stop afterwards to give their
# memory back. A few minutes, mostly waiting for the nodes.
step "clusters: delivery and failover tests on a 3-node Elasticsearch and a Redis Cluster"
cluster_stage() {
  local rc=0 out pid1 pid2
  export NC_ES_CLUSTER_JAVA_OPTS=-XX:TieredStopAtLevel=1 # faster node (re)starts; not a measurement
  # The nodes start beside the dashboard's type check and builds: a longer wait
  # for them than services.sh's own 120 s (NC_WAIT_TIMEOUT), which only waits.
  NC_WAIT_TIMEOUT=${NC_WAIT_TIMEOUT:-300} NC_ES_NODES=3 NC_REDIS_CLUSTER=1 "$root/scripts/services.sh" up || return 1
  out=$(mktemp -d)
  # The Elasticsearch node kill first, with no other test on Elasticsearch (the node it
  # kills serves them all), beside the Redis Cluster's client, sink and ACL users tests
  # (conformance, a master killed mid-publish, each role's rights on every node), which use no
  # Elasticsearch (and so restart their node without the Elasticsearch cluster's settings).
  (eval "$(NC_ES_NODES=3 "$root/scripts/services.sh" env)" &&
    cd e2e && "${race[@]}" -timeout 6m -json -run '^TestClusterElasticsearchNodeKilledMidDrain$' . >"$out/1.json") &
  pid1=$!
  (eval "$(NC_REDIS_CLUSTER=1 "$root/scripts/services.sh" env)" &&
    (cd infrastructure && "${race[@]}" -json -run '^(TestOpenClusterURL|TestNewConnectsAndPings)$' ./redisclient) >"$out/2.json" &&
    (cd publisher && "${race[@]}" -json -run '^TestCluster' ./internal/sink/) >"$out/3.json" &&
    (cd deploy/opstest && "${race[@]}" -json -run '^TestClusterRedisUsers$' .) >"$out/7.json") &
  pid2=$!
  wait "$pid1" || rc=1
  wait "$pid2" || rc=1
  # Then the delivery test on the Elasticsearch cluster (with one Redis), beside a Redis
  # master killed under the real publisher.
  (eval "$(NC_ES_NODES=3 "$root/scripts/services.sh" env)" &&
    (cd infrastructure && "${race[@]}" -json -run '^TestReplicasFollowTheDataNodes$' ./contentindex) >"$out/4.json" &&
    (cd e2e && "${race[@]}" -timeout 6m -json -run '^TestPipelineDeliversEveryDocumentOnce$' .) >"$out/5.json") &
  pid1=$!
  (eval "$(NC_ES_NODES=3 NC_REDIS_CLUSTER=1 "$root/scripts/services.sh" env)" &&
    cd e2e && "${race[@]}" -timeout 6m -json -run '^TestClusterRedisMasterKilledMidDrain$' . >"$out/6.json") &
  pid2=$!
  wait "$pid1" || rc=1
  wait "$pid2" || rc=1
  cat "$out"/*.json >>"$json"
  # The figures (documents, duplicates, time to recover) of each failover test.
  grep -ho '"Output":"cluster-[a-z0-9-]*: [^"]*' "$out"/*.json | sed 's/^"Output":"//; s/\\n$//' >&2 || true
  rm -rf "$out"
  "$root/scripts/services.sh" down-clusters || rc=1
  return $rc
}
cluster_stage || status=1
touch "$jobs_dir/clusters-done"
stage_end

join fuzz || status=1

join dashboard || { echo "dashboard checks failed" >&2; status=1; }
join eval || status=1
join compose || status=1

# The takeover figures of the kill-mid-batch test (time from a classifier's
# SIGKILL to the delivery of the documents it held).
grep -ho '"Output":"[^"]*takeover-[a-z_]*: [^"]*' "$json" | sed 's/^"Output":"[ ]*//; s/\\n$//' >&2 || true

# One summary over every module, in gotestsum's format.
"$gotestsum" --format pkgname --raw-command -- cat "$json" || status=1

if [ "${CI:-}" = "true" ] && grep -q '"Action":"skip","Package":"[^"]*","Test"' "$json"; then
  echo "CI=true: these tests skipped, and CI must not pass by skipping:" >&2
  grep -o '"Action":"skip","Package":"[^"]*","Test":"[^"]*"' "$json" | sort -u >&2
  status=1
fi

# One closing line over everything: Go tests (subtests included), the
# dashboard's unit tests and its browser end-to-end test.
dashlog=$jobs_dir/dashboard.log
go_pass=$(grep -c '"Action":"pass","Package":"[^"]*","Test"' "$json" || true)
go_fail=$(grep -c '"Action":"fail","Package":"[^"]*","Test"' "$json" || true)
unit_pass=$(sed -n 's/^vitest: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' "$dashlog" | tail -1)
unit_fail=$(sed -n 's/^vitest: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' "$dashlog" | tail -1)
e2e_pass=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$dashlog" | tail -1)
e2e_fail=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$dashlog" | tail -1)
passed=$((go_pass + ${unit_pass:-0} + ${e2e_pass:-0}))
failed=$((go_fail + ${unit_fail:-0} + ${e2e_fail:-0}))
if [ "$status" != 0 ] && [ "$failed" = 0 ]; then
  failed=1 # a step failed outside any counted test (vet, build, promtool, npm)
fi
stage_end
echo "stages (seconds, and how busy the machine's CPUs were meanwhile; a background stage's from its own start, beside the others):" >&2
printf '%s\n' "${timings[@]}" >&2
echo "test.sh finished in $(( $(date +%s) - start ))s with status $status" >&2
echo "tests: $passed passed, $failed failed"
exit $status
