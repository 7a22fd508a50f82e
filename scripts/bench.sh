#!/usr/bin/env bash
# bench.sh - run every benchmark the issues ask for against the real services,
# then print each figure on a line of its own:  bench: <name>: <value> <unit>
#
# Benchmarks are ordinary Go benchmarks that report their figures with
# b.ReportMetric(value, "unit"). Every package listed in BENCH_PACKAGES below
# is run once (-benchtime=1x: each benchmark sizes its own workload), and
# every reported metric except Go's default ns/op, B/op and allocs/op becomes
# a `bench:` line named <module>/<Benchmark name without the -N suffix>/<unit>.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# module:package pattern, one per line. Add yours here.
BENCH_PACKAGES=(
  publisher:./internal/worker/
  classifier:./internal/rules/
  index-manager:./internal/api/
  e2e:.
)

"$root/scripts/services.sh" up >&2
eval "$("$root/scripts/services.sh" env)"

lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
for entry in "${BENCH_PACKAGES[@]}"; do
  module=${entry%%:*}
  pkg=${entry#*:}
  echo "== $module $pkg" >&2
  # The full output goes to stderr as it comes; the benchmark result lines
  # are kept, prefixed with the module, for the summary. tee -a: with stderr
  # redirected to a file, a plain tee would truncate it at every step.
  if ! (cd "$root/$module" && go test -run '^$' -bench . -benchtime 1x -timeout 60m "$pkg") 2>&1 |
    tee -a /dev/stderr | sed -n "s/^Benchmark/$module Benchmark/p" >>"$lines"; then
    echo "benchmark $module $pkg failed" >&2
    exit 1
  fi
done

# The replica benchmark once more on the clusters (docs/scaling.md): a 3-node Elasticsearch
# and a Redis Cluster started beside the single-node services, stopped afterwards; its
# figures are named by the mode (e2e/Replicas/es3+redis-cluster/...). NC_BENCH_CLUSTERS=0
# skips it.
if [ "${NC_BENCH_CLUSTERS:-1}" != 0 ]; then
  echo "== e2e BenchmarkReplicas on the clusters" >&2
  NC_ES_NODES=3 NC_REDIS_CLUSTER=1 "$root/scripts/services.sh" up >&2
  if ! (eval "$(NC_ES_NODES=3 NC_REDIS_CLUSTER=1 "$root/scripts/services.sh" env)" &&
    cd "$root/e2e" && go test -run '^$' -bench '^BenchmarkReplicas$' -benchtime 1x -timeout 60m .) 2>&1 |
    tee -a /dev/stderr | sed -n "s/^Benchmark/e2e Benchmark/p" >>"$lines"; then
    echo "benchmark e2e BenchmarkReplicas on the clusters failed" >&2
    "$root/scripts/services.sh" down-clusters >&2 || true
    exit 1
  fi
  "$root/scripts/services.sh" down-clusters >&2
fi

# Lines look like: "<module> BenchmarkName-2  1  123 ns/op  4567 msgs/s ..."
# A figure whose ceiling the same benchmark measured but did not divide by
# gets its ratio too (derived below): the classifier's drain against bare
# _bulk of the same documents (x_of_es_bulk).
echo
awk '
  $2 ~ /^Benchmark/ {
    mod = $1; name = $2; sub(/^Benchmark/, "", name); sub(/-[0-9]+$/, "", name)
    for (i = 4; i < NF; i += 2) {
      unit = $(i + 1)
      if (unit == "ns/op" || unit == "B/op" || unit == "allocs/op") continue
      printf "bench: %s/%s: %s %s\n", mod, name, $i, unit
      v[mod "/" name, unit] = $i
      seen[mod "/" name] = 1
    }
  }
  END {
    for (k in seen)
      if (((k, "classified_docs/s") in v) && v[k, "es_bulk_docs/s"] > 0)
        printf "bench: %s: %.4g x_of_es_bulk\n", k, v[k, "classified_docs/s"] / v[k, "es_bulk_docs/s"]
  }' "$lines"
