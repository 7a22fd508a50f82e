#!/usr/bin/env bash
# bench.sh - run every benchmark the issues ask for against the real services,
# each BENCH_RUNS times (default 3), then print each figure on a line of its
# own as the median of the runs with its spread:
#
#   bench: <name>: <median> <unit> (min <min>, max <max>, n=<runs>)
#
# Duplicate counts (units ending in _twice) are the sum over the runs
# instead: any document classified or published twice in any run shows.
#
# Benchmarks are ordinary Go benchmarks that report their figures with
# b.ReportMetric(value, "unit"). Every metric except Go's default ns/op, B/op
# and allocs/op becomes a `bench:` line named
# <module>/<Benchmark name without the -N suffix>.
#
# Settings (environment):
#   BENCH_ONLY="drain latency"  run only these groups (default: all of them):
#       publisher      publisher/internal/worker (Drain100k, PublishLag)
#       rules          classifier/internal/rules (Match, MatchStemming, Reload) and
#                      classifier/internal/api (RuleEditReachesPlayground)
#       topics         classifier/internal/topicmodel (Decide per document, the
#                      default model's heap)
#       index-manager  index-manager/internal/api (ListIndices200)
#       drain          e2e ClassifierDrain (20-200 KB pages), ClassifierDrain100KB
#                      (and ClassifierDrainTuned with BENCH_DRAIN_TUNED=1)
#       oneindex       e2e DrainOneIndex (one raw index of 3,000 articles, text only
#                      and inside 80 KB pages: new ids, then the same ids after the
#                      index was deleted and created again)
#       latency        e2e EndToEndLatency (100 docs/s, raw write -> Redis)
#       backfill       e2e FreshDuringBackfill
#       replicas       e2e Replicas on the single-node services
#       clusters       e2e Replicas on a 3-node Elasticsearch and a Redis Cluster
#   BENCH_RUNS=3        runs of each benchmark (the median is printed)
#   BENCH_SMALL=1       small sizes for a quick check (each size below still
#                       wins when set): 2,000 drained documents, 500 latency
#                       samples, 10 s of publish lag, 10,000 drained outbox rows,
#                       2,000 documents per replica run
#   BENCH_DRAIN_DOCS, BENCH_ONEINDEX_DOCS, BENCH_LATENCY_DOCS, BENCH_LATENCY_RATE,
#   PUBLISHER_BENCH_LAG_SECONDS, PUBLISHER_BENCH_DRAIN_ROWS, BENCH_REPLICAS_DOCS
#                       the sizes themselves (defaults in each benchmark)
#   BENCH_DURABILITY=on Postgres with fsync, synchronous_commit and
#                       full_page_writes on for the run (ALTER SYSTEM on the
#                       harness server, reset on exit; the harness turns them
#                       off); "harness" keeps the harness's setting
#   BENCH_HARNESS="drain publisher"
#                       groups run a second time with the harness's setting when
#                       it differs, named <name>/pg=harness; "" skips that
#
# If the script is killed before it resets the setting:
#   scripts/bench.sh durability-reset
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

all_groups="publisher rules topics index-manager drain oneindex latency backfill replicas clusters"
only=${BENCH_ONLY:-$all_groups}
only=${only//,/ }
runs=${BENCH_RUNS:-3}
durability=${BENCH_DURABILITY:-on}
harness_groups=${BENCH_HARNESS-drain publisher}
harness_groups=${harness_groups//,/ }
if [[ ${BENCH_SMALL:-0} == 1 ]]; then
  export BENCH_DRAIN_DOCS=${BENCH_DRAIN_DOCS:-2000}
  export BENCH_LATENCY_DOCS=${BENCH_LATENCY_DOCS:-500}
  export PUBLISHER_BENCH_LAG_SECONDS=${PUBLISHER_BENCH_LAG_SECONDS:-10}
  export PUBLISHER_BENCH_DRAIN_ROWS=${PUBLISHER_BENCH_DRAIN_ROWS:-10000}
  export BENCH_REPLICAS_DOCS=${BENCH_REPLICAS_DOCS:-2000}
fi
for g in $only $harness_groups; do
  [[ " $all_groups " == *" $g "* ]] || { echo "bench.sh: unknown group $g (groups: $all_groups)" >&2; exit 2; }
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "bench.sh: BENCH_RUNS must be a positive integer" >&2; exit 2; }
[[ $durability == on || $durability == harness ]] || { echo "bench.sh: BENCH_DURABILITY must be on or harness" >&2; exit 2; }

"$root/scripts/services.sh" up >&2
eval "$("$root/scripts/services.sh" env)"

pg_admin() { psql -X -q -At -v ON_ERROR_STOP=1 "$POSTGRES_ADMIN_URL" -c "$1"; }
durable_settings="fsync synchronous_commit full_page_writes"
# pg_durability on|reset: ALTER SYSTEM (postgresql.auto.conf, read after the
# harness's north-cloud.conf) and a reload; all three apply on reload.
# ALTER SYSTEM cannot share a statement string: one psql call each.
pg_durability() {
  local s
  for s in $durable_settings; do
    if [[ $1 == on ]]; then pg_admin "ALTER SYSTEM SET $s = on"; else pg_admin "ALTER SYSTEM RESET $s"; fi
  done
  pg_admin "SELECT pg_reload_conf()" >/dev/null
  sleep 1 # the postmaster signals its backends; new settings apply at their next command
}
pg_settings() {
  pg_admin "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes')"
}

if [[ ${1:-} == durability-reset ]]; then
  pg_durability reset
  echo "postgres: $(pg_settings)"
  exit 0
fi

lines=$(mktemp)
reset_pg=0
cleanup() {
  rm -f "$lines"
  if [[ $reset_pg == 1 ]]; then pg_durability reset || echo "bench.sh: could not reset the Postgres settings: run scripts/bench.sh durability-reset" >&2; fi
}
trap cleanup EXIT

harness_pg=$(pg_settings)

# run_go MODULE PACKAGE PATTERN SUFFIX [ENV...]: the benchmarks of PACKAGE
# matching PATTERN, BENCH_RUNS times; result lines kept as
# "<module> <name><suffix> <value> <unit> ...".
run_go() {
  local module=$1 pkg=$2 pattern=$3 suffix=$4
  shift 4
  echo "== $module $pkg $pattern${suffix:+ ($suffix)} x$runs" >&2
  # The full output goes to stderr as it comes. tee -a: with stderr
  # redirected to a file, a plain tee would truncate it at every step.
  if ! (cd "$root/$module" && env "$@" go test -run '^$' -bench "$pattern" -benchtime 1x -count "$runs" -timeout 240m "$pkg") 2>&1 |
    tee -a /dev/stderr |
    awk -v mod="$module" -v suffix="$suffix" '$1 ~ /^Benchmark/ { name = $1; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name); $1 = name suffix; print mod, $0 }' >>"$lines"; then
    echo "benchmark $module $pkg failed" >&2
    exit 1
  fi
}

run_group() {
  local g=$1 suffix=$2
  case $g in
  publisher) run_go publisher ./internal/worker/ . "$suffix" ;;
  rules)
    run_go classifier ./internal/rules/ . "$suffix"
    run_go classifier ./internal/api/ '^BenchmarkRuleEditReachesPlayground$' "$suffix"
    ;;
  topics) run_go classifier ./internal/topicmodel/ . "$suffix" ;;
  index-manager) run_go index-manager ./internal/api/ . "$suffix" ;;
  drain)
    if [[ -n $suffix ]]; then
      run_go e2e . '^BenchmarkClassifierDrain$' "$suffix"
    else
      run_go e2e . '^BenchmarkClassifierDrain(100KB|Tuned)?$' "$suffix"
    fi
    ;;
  oneindex) run_go e2e . '^BenchmarkDrainOneIndex$' "$suffix" ;;
  latency) run_go e2e . '^BenchmarkEndToEndLatency$' "$suffix" ;;
  backfill) run_go e2e . '^BenchmarkFreshDuringBackfill$' "$suffix" ;;
  replicas) run_go e2e . '^BenchmarkReplicas$' "$suffix" ;;
  clusters)
    # The replica benchmark on the clusters (docs/scaling.md): a 3-node
    # Elasticsearch and a Redis Cluster started beside the single-node
    # services, stopped afterwards; its figures are named by the mode
    # (e2e/Replicas/es3+redis-cluster/...).
    NC_ES_NODES=3 NC_REDIS_CLUSTER=1 "$root/scripts/services.sh" up >&2
    local cenv
    cenv=$(NC_ES_NODES=3 NC_REDIS_CLUSTER=1 "$root/scripts/services.sh" env)
    if ! (eval "$cenv" && run_go e2e . '^BenchmarkReplicas$' "$suffix"); then
      "$root/scripts/services.sh" down-clusters >&2 || true
      exit 1
    fi
    "$root/scripts/services.sh" down-clusters >&2
    ;;
  esac
}

if [[ $durability == on ]]; then
  reset_pg=1
  pg_durability on
fi
echo "== postgres for the benchmarks: $(pg_settings) (harness: $harness_pg)" >&2
for g in $all_groups; do
  [[ " $only " == *" $g "* ]] && run_group "$g" ""
done
if [[ $durability == on && -n ${harness_groups// /} && $harness_pg != "$(pg_settings)" ]]; then
  pg_durability reset
  reset_pg=0
  echo "== postgres as the harness has it: $(pg_settings)" >&2
  for g in $all_groups; do
    [[ " $only " == *" $g "* && " $harness_groups " == *" $g "* ]] && run_group "$g" /pg=harness
  done
fi

# Lines look like: "<module> Name[/sub][suffix] 1 123 ns/op 4567 msgs/s ...".
echo
echo "postgres: $([[ $durability == on ]] && echo "fsync=on full_page_writes=on synchronous_commit=on" || echo "$harness_pg") for the figures of record; /pg=harness: $harness_pg; $runs runs each"
awk '
  function num(x) { return (x >= 1000 || x <= -1000) ? sprintf("%.0f", x) : sprintf("%.4g", x) }
  {
    mod = $1; name = $2
    for (i = 4; i < NF; i += 2) {
      unit = $(i + 1)
      if (unit == "ns/op" || unit == "B/op" || unit == "allocs/op") continue
      k = mod "/" name SUBSEP unit
      if (!(k in n)) { order[++nk] = k }
      vals[k, ++n[k]] = $i + 0
    }
  }
  END {
    for (j = 1; j <= nk; j++) {
      k = order[j]; split(k, ku, SUBSEP); c = n[k]
      for (a = 1; a <= c; a++) v[a] = vals[k, a]
      for (a = 2; a <= c; a++) { x = v[a]; for (b = a - 1; b >= 1 && v[b] > x; b--) v[b + 1] = v[b]; v[b + 1] = x }
      if (ku[2] ~ /_twice$/) {
        s = 0; for (a = 1; a <= c; a++) s += v[a]
        printf "bench: %s: %d %s (sum of n=%d)\n", ku[1], s, ku[2], c
        continue
      }
      med = (c % 2) ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
      printf "bench: %s: %s %s (min %s, max %s, n=%d)\n", ku[1], num(med), ku[2], num(v[1]), num(v[c]), c
    }
  }' "$lines"
