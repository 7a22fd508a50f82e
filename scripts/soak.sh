#!/usr/bin/env bash
# soak.sh - run the pipeline for a long time at a steady arrival rate, with a
# fault every few minutes, and report what it delivered and how its processes
# and databases grew.
#
#   scripts/soak.sh 1h                       # 100 docs/s, a fault every 5 minutes
#   SOAK_RATE=50 SOAK_FAULT_EVERY=2m scripts/soak.sh 20m
#
# It starts the services it needs (scripts/services.sh up: Postgres, Redis,
# Elasticsearch) and runs e2e's TestSoak: a publisher and two classifier
# replicas built from this checkout, their databases on a private Postgres
# cluster, the loader writing real-length articles into two sources' raw
# indices. The faults, in turn: a classifier replica SIGKILLed and started
# again, the publisher SIGKILLed and started again, the Postgres of both
# services stopped for 10 s, a classifier replica frozen for 20 s, the
# publisher's Redis (a private server) stopped for 2 s, the Elasticsearch
# of the raw and classified indices (a private node) stopped and started
# again.
#
# It prints `soak:` lines (delivered/expected, duplicates, the lag outside
# the fault windows, each process's RSS and goroutines, the databases'
# connections and table sizes, first, last and slope after the warm-up) and
# writes the same as markdown to SOAK_REPORT (default
# $NC_STATE_DIR/soak-<time>.md). It fails when a document is not delivered,
# when more than 1% of messages are duplicates, or when a process crashed on
# its own. The lag and the slopes are reported, never asserted.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
duration=${1:-${SOAK_DURATION:-}}
if [[ -z $duration ]]; then
  sed -n '2,24p' "$0" >&2
  exit 2
fi
"$root/scripts/services.sh" up >/dev/null
eval "$("$root/scripts/services.sh" env)"
state=${NC_STATE_DIR:-$root/.state}
mkdir -p "$state"
report=${SOAK_REPORT:-$state/soak-$(date -u +%Y%m%dT%H%M%SZ).md}
# seconds D: a Go duration (1h, 20m, 1h30m, 90s) in seconds.
seconds() {
  local d=$1 total=0 n
  [[ $d =~ ^([0-9]+[hms])+$ ]] || { echo "soak.sh: $d is not a duration like 1h, 20m or 1h30m" >&2; exit 2; }
  while [[ $d =~ ^([0-9]+)([hms])(.*)$ ]]; do
    n=${BASH_REMATCH[1]}
    case ${BASH_REMATCH[2]} in h) n=$((n * 3600)) ;; m) n=$((n * 60)) ;; esac
    total=$((total + n))
    d=${BASH_REMATCH[3]}
  done
  echo "$total"
}
# The run, a loader behind its schedule (stopped after as long again, at most 10 minutes), the final wait for
# late deliveries (5 minutes), the start-up and the builds.
minutes=$(( $(seconds "$duration") / 60 + 25 ))
echo "== soak: $duration at ${SOAK_RATE:-100} docs/s, a fault every ${SOAK_FAULT_EVERY:-5m}; report in $report"
cd "$root/e2e"
SOAK_DURATION=$duration SOAK_REPORT=$report go test -count=1 -run '^TestSoak$' -timeout "${minutes}m" -v . |
  grep --line-buffered -E '^(soak:|--- |FAIL|ok|PASS)|fault:|soak_test.go'
