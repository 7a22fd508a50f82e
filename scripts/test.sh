#!/usr/bin/env bash
# test.sh - every test of the project against the real services: starts
# PostgreSQL, Redis and Elasticsearch (scripts/services.sh), checks formatting
# and vet, then runs `go test -race` over every Go module, the end-to-end test
# included, and prints one summary. Under CI=true a test that skipped fails the
# run: CI never passes by skipping.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export GOTOOLCHAIN=local
cache="${NC_CACHE_DIR:-$HOME/.cache/north-cloud}"
start=$(date +%s)

step() { printf '\n== %s\n' "$*" >&2; }

step "services"
"$root/scripts/services.sh" up
eval "$("$root/scripts/services.sh" env)"

modules=$(sed -n 's#^[[:space:]]*\./\(.*\)$#\1#p' go.work)

step "gofmt and go vet"
unformatted=$(gofmt -l $modules)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
for m in $modules; do
  (cd "$m" && go vet ./...)
done

status=0
# ---- Prometheus configuration and alert rules (promtool) ---------------------
# Debian's prometheus package ships promtool (and the prometheus binary the
# Prometheus end-to-end test in e2e/ runs). RUNLEVEL=1 keeps its maintainer
# scripts from starting a prometheus daemon on :9090.
step "promtool: Prometheus configs, alert rules and rule unit tests"
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "installing Debian's prometheus package (promtool)" >&2
  { apt-get -o DPkg::Lock::Timeout=600 -q update &&
    RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -q -y \
      install --no-install-recommends prometheus; } >&2 || status=1
fi
promtool check config deploy/prometheus/prometheus.yml || status=1
promtool check config deploy/prometheus/prometheus.native.yml || status=1
promtool check rules deploy/prometheus/alerts.yml || status=1
promtool test rules deploy/prometheus/alerts_test.yml || status=1

gotestsum="$cache/bin/gotestsum"
if [ ! -x "$gotestsum" ]; then
  step "installing gotestsum (once)"
  mkdir -p "$cache/bin"
  GOBIN="$cache/bin" go install gotest.tools/gotestsum@v1.13.0
fi

step "go test -race (all modules)"
json=$(mktemp)
trap 'rm -f "$json"' EXIT
for m in $modules; do
  echo "-- $m" >&2
  (cd "$m" && go test -race -count=1 -timeout 20m -json ./... >>"$json") || status=1
done

# One summary over every module, in gotestsum's format.
"$gotestsum" --format testname --raw-command -- cat "$json" || status=1

if [ "${CI:-}" = "true" ] && grep -q '"Action":"skip","Package":"[^"]*","Test"' "$json"; then
  echo "CI=true: these tests skipped, and CI must not pass by skipping:" >&2
  grep -o '"Action":"skip","Package":"[^"]*","Test":"[^"]*"' "$json" | sort -u >&2
  status=1
fi

echo "test.sh finished in $(( $(date +%s) - start ))s with status $status" >&2
exit $status
