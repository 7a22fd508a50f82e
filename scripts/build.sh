#!/usr/bin/env bash
# build.sh - every service binary into bin/ (or $1): the classifier (with its
# loader), the publisher, the index-manager and the dashboard server.
#
# This is the project's one build configuration for binaries that do not
# run under the race detector, the one the container images ship: each
# module on its own (GOWORK=off: its go.mod decides the versions), static
# (CGO_ENABLED=0), -trimpath. scripts/test.sh vets with it, and the tests
# that start binaries build them with it (infrastructure/testenv.GoBuild),
# so a new machine compiles each package once for all of them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/bin}
mkdir -p "$out"
for m in classifier publisher index-manager dashboard/server; do
  (cd "$root/$m" && CGO_ENABLED=0 GOWORK=off go build -trimpath -o "$out/" ./cmd/...)
done
