#!/usr/bin/env bash
# bench-compare.sh - compare a benchmark run with a saved baseline.
#
#   scripts/task bench > run.txt                # or scripts/bench.sh > run.txt
#   scripts/bench-compare.sh docs/bench-baseline.txt run.txt
#   scripts/bench-compare.sh -fail 50 docs/bench-baseline.txt run.txt
#
# Both files may hold anything; only their "bench: <name>: <value> <unit>"
# lines are read. For every figure of the baseline it prints the baseline
# value, the new one, new/baseline, and a verdict from the figure's unit:
# higher is better for rates and ratios (…/s, x_…), lower is better for
# times and sizes (…ms, ns/…, …_us/…, …MB, x_of_steady, x_of_p99_goal,
# x_cpu_of_unstemmed);
# anything else is only shown. A change within -tolerance percent (default
# 10) is "same". Figures missing from either side are listed.
#
# It exits 1 when a figure of the baseline is missing from the run (a
# benchmark that failed or was dropped must not pass for "no change"), when
# a duplicate count of the run (a unit ending in _twice: documents
# classified or published more than once) is above 0, or when -fail PCT is
# given and some figure got worse by more than PCT percent; else 0.
# Benchmarks on a shared machine are noisy, so the ratios are for a reviewer
# to read, and a gate needs a generous threshold. -allow-missing compares a
# run of a subset (scripts/bench.sh with BENCH_ONLY) without failing on
# what it did not run. Never turn these figures into timed assertions in
# tests.
#
# A benchmark that states its machine reports floors beside its figures
# (units floor_<what>_p99_ms: the bare round trips of this machine at that
# moment, package benchfloor). A p99_ms of that benchmark more than
# -floor-x times (default 3) the sum of its floors, the chain a message
# cannot avoid, is printed as a FLOOR line: the tail is the code's, not the
# machine's. The FLOOR lines do not change the exit status.
set -euo pipefail

tolerance=10
floorx=3
fail=
allow_missing=0
while [[ $# -gt 0 ]]; do
  case $1 in
  -tolerance) tolerance=$2; shift 2 ;;
  -fail) fail=$2; shift 2 ;;
  -floor-x) floorx=$2; shift 2 ;;
  -allow-missing) allow_missing=1; shift ;;
  -h | --help) sed -n '2,35p' "$0"; exit 0 ;;
  -*) echo "bench-compare: unknown flag $1" >&2; exit 2 ;;
  *) break ;;
  esac
done
if [[ $# -ne 2 ]]; then
  echo "usage: $0 [-tolerance PCT] [-fail PCT] [-floor-x N] [-allow-missing] BASELINE RUN" >&2
  exit 2
fi

awk -v tol="$tolerance" -v fail="$fail" -v floorx="$floorx" -v allow_missing="$allow_missing" '
  function key(line,   rest) {
    # "bench: <name>: <value> <unit>" -> name SUBSEP unit, value in VAL
    rest = substr(line, 8)
    n = split(rest, parts, ": ")
    NAME = parts[1]
    for (i = 2; i < n; i++) NAME = NAME ": " parts[i]
    split(parts[n], vu, " ")
    VAL = vu[1]; UNIT = vu[2]
    return NAME " [" UNIT "]"
  }
  function direction(unit) {
    if (unit == "x_of_steady" || unit == "x_of_p99_goal" || unit == "x_cpu_of_unstemmed") return -1
    if (unit == "raw_writes_per_doc" || unit ~ /_twice$/) return -1
    if (unit == "x_faster_than_aho_corasick") return 0   # one engine against the other
    if (unit ~ /\/s$/ || unit ~ /^x_/) return 1
    if (unit ~ /ms$/ || unit ~ /^ns\// || unit ~ /_ns\// || unit ~ /_us\// || unit ~ /_ms\// || unit ~ /MB$/) return -1
    return 0
  }
  FNR == 1 { file++ }
  /^bench: / {
    k = key($0)
    if (file == 1) { base[k] = VAL; unitof[k] = UNIT; order[++nb] = k }
    else {
      cur[k] = VAL; if (!(k in base)) { unitof[k] = UNIT; extra[++ne] = k }
      if (UNIT ~ /^floor_.*_p99_ms$/) { chain[NAME] += VAL; floors[NAME] = floors[NAME] " " UNIT "=" VAL }
      if (UNIT == "p99_ms") p99[NAME] = VAL
    }
  }
  END {
    printf "%-78s %12s %12s %8s  %s\n", "figure", "baseline", "now", "now/base", "verdict"
    worst = 0
    for (i = 1; i <= nb; i++) {
      k = order[i]
      if (!(k in cur)) {
        printf "%-78s %12s %12s %8s  %s\n", k, base[k], "-", "-", "MISSING in run"
        missing++
        continue
      }
      b = base[k] + 0; c = cur[k] + 0
      ratio = (b != 0) ? c / b : 0
      d = direction(unitof[k]); verdict = "-"
      if (b != 0 && d != 0) {
        change = (ratio - 1) * 100 * d   # > 0 better, < 0 worse
        if (change > tol) verdict = sprintf("better (%+.0f%%)", change)
        else if (change < -tol) verdict = sprintf("WORSE (%+.0f%%)", change)
        else verdict = "same"
        if (-change > worst) { worst = -change; worstk = k }
      }
      printf "%-78s %12s %12s %8s  %s\n", k, base[k], cur[k], (b != 0 ? sprintf("%.3f", ratio) : "-"), verdict
    }
    for (i = 1; i <= ne; i++) printf "%-78s %12s %12s %8s  %s\n", extra[i], "-", cur[extra[i]], "-", "new figure"
    for (nm in p99)
      if ((nm in chain) && chain[nm] > 0 && p99[nm] + 0 > floorx * chain[nm])
        printf "FLOOR: %s p99_ms %s is %.1f times the sum of its floors (%s ): the tail is the code'"'"'s, not the machine'"'"'s\n", nm, p99[nm], p99[nm] / chain[nm], floors[nm]
    status = 0
    for (k in cur)
      if (unitof[k] ~ /_twice$/ && cur[k] + 0 > 0) {
        printf "bench-compare: %s is %s: a document was classified or published more than once\n", k, cur[k] > "/dev/stderr"
        status = 1
      }
    if (missing > 0 && !allow_missing) {
      printf "bench-compare: %d figure(s) of the baseline missing from the run\n", missing > "/dev/stderr"
      status = 1
    }
    if (fail != "" && worst > fail + 0) {
      printf "bench-compare: %s is %.0f%% worse than the baseline (limit %s%%)\n", worstk, worst, fail > "/dev/stderr"
      status = 1
    }
    exit status
  }' "$1" "$2"
