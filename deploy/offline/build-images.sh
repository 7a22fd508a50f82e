#!/usr/bin/env bash
# build-images.sh - builds the local stand-ins of the images docker-compose.yml pulls, for a
# machine that reaches no image registry (compose.offline.yml selects them):
#
#   north-cloud-offline/debian:bookworm        debootstrap of Debian bookworm, `docker import`ed
#   north-cloud-offline/postgres:15            Debian's PostgreSQL 15 + an official-like entrypoint
#   north-cloud-offline/redis:7                Debian's Redis 7
#   north-cloud-offline/elasticsearch:<ver>    Maven Central's integ-test-zip on Debian's JDK 17
#   north-cloud-offline/prometheus:2           Debian's Prometheus
#   north-cloud-offline/golang:<go version>    Go from the Go module proxy (golang.org/toolchain)
#   north-cloud-offline/node:<node version>    this machine's Node.js and npm
#   north-cloud-offline/runtime:busybox        Debian's static busybox (stands in for alpine)
#
# Run as root (debootstrap) on Debian with a running Docker engine; the packages come from
# Debian's mirror, the Elasticsearch zip from Maven Central (cached in NC_CACHE_DIR, shared
# with scripts/services.sh), the Go toolchain through GOPROXY. The machine's local CA
# certificates (/usr/local/share/ca-certificates, e.g. a TLS-intercepting proxy's) are
# trusted inside the Go, Node and runtime images as on the host. An image whose inputs (its
# Dockerfile, files and versions) have not changed since it was built is kept; --force
# rebuilds all. Prints one line per image to stderr.
#
# Settings (environment):
#   NC_CACHE_DIR          download cache                        ($HOME/.cache/north-cloud)
#   NC_ES_VERSION         Elasticsearch version                 (8.19.21)
#   NC_OFFLINE_GO         Go version of the Go image            (this machine's `go env GOVERSION`)
#   NC_DEBIAN_MIRROR      Debian mirror for debootstrap         (http://deb.debian.org/debian)
set -euo pipefail
cd "$(dirname "$0")"

readonly CACHE_DIR="${NC_CACHE_DIR:-${HOME:-/root}/.cache/north-cloud}"
readonly ES_VERSION="${NC_ES_VERSION:-8.19.21}"
readonly MIRROR="${NC_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
readonly BASE=north-cloud-offline/debian:bookworm
readonly LABEL=north-cloud.offline.inputs
FORCE=0
[[ ${1:-} == --force ]] && FORCE=1

log() { printf '==> offline images: %s\n' "$*" >&2; }
die() {
  printf 'build-images.sh: error: %s\n' "$*" >&2
  exit 1
}

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# built TAG HASH: the image exists and was built from inputs with that hash.
built() {
  ((FORCE == 0)) && [[ $(docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null) == "$2" ]]
}

base_image() {
  local hash rootfs
  # Bump the number when base_image changes what it builds.
  hash="bookworm-minbase-1 $MIRROR"
  if built "$BASE" "$hash"; then log "$BASE is up to date"; return 0; fi
  command -v debootstrap >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -q -y install --no-install-recommends debootstrap >&2 ||
      die "apt-get install debootstrap failed"
  }
  rootfs="$WORK/rootfs"
  log "debootstrap bookworm from $MIRROR (a few minutes)"
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
    { tail -n 20 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
  cat >"$rootfs/etc/apt/sources.list" <<EOS
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOS
  # As in Debian's own images: no recommends, no services started by package scripts.
  printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$rootfs/etc/apt/apt.conf.d/90north-cloud"
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
  chmod +x "$rootfs/usr/sbin/policy-rc.d"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV DEBIAN_FRONTEND=noninteractive' \
    -c "LABEL $LABEL=\"$hash\"" -c 'CMD ["/bin/bash"]' - "$BASE" >/dev/null || die "docker import failed"
  log "$BASE imported"
}

# image TAG DOCKERFILE EXTRA-HASH-INPUT [FILE...]: builds TAG from deploy/offline/DOCKERFILE
# with the FILEs (of this directory), the machine's local CA certificates (local-ca/) and what
# main put into $WORK/ctx as its context.
image() {
  local tag=$1 dockerfile=$2 extra=$3 hash
  shift 3
  hash="$( (cat "$dockerfile" "$@" /usr/local/share/ca-certificates/*.crt 2>/dev/null; printf '%s\n' "$extra" "$(docker image inspect -f '{{.Id}}' "$BASE")") | sha256sum | cut -c1-16)"
  if built "$tag" "$hash"; then
    log "$tag is up to date"
    rm -rf "$WORK/ctx"
    return 0
  fi
  mkdir -p "$WORK/ctx/local-ca"
  cp "$dockerfile" "$@" "$WORK/ctx/"
  # The machine's local CAs (a TLS-intercepting proxy's): the images that fetch through the
  # proxy, or carry the CA bundle, trust them as the host does.
  cp /usr/local/share/ca-certificates/*.crt "$WORK/ctx/local-ca/" 2>/dev/null || true
  log "building $tag"
  docker build -q --label "$LABEL=$hash" --build-arg "BASE_IMAGE=$BASE" ${BUILD_ARGS:+$BUILD_ARGS} \
    -t "$tag" -f "$WORK/ctx/$dockerfile" "$WORK/ctx" >"$WORK/build.log" 2>&1 ||
    { tail -n 30 "$WORK/build.log" >&2; die "docker build of $tag failed"; }
  rm -rf "$WORK/ctx"
}

es_zip() {
  local zip="$CACHE_DIR/elasticsearch-$ES_VERSION.zip"
  local url="https://repo1.maven.org/maven2/org/elasticsearch/distribution/integ-test-zip/elasticsearch/$ES_VERSION/elasticsearch-$ES_VERSION.zip"
  if [[ ! -s $zip ]]; then
    mkdir -p "$CACHE_DIR"
    log "downloading $url"
    curl -fL --retry 3 --connect-timeout 20 -sS -o "$zip.part" "$url" || die "download failed: $url"
    mv "$zip.part" "$zip"
  fi
  echo "$zip"
}

# go_toolchain VERSION: prints the GOROOT of the toolchain module (module zips keep no
# execute bits: the copy gets them back).
go_toolchain() {
  local ver=$1 arch dir
  case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) die "no Go toolchain for $(uname -m)" ;; esac
  dir="$(cd "$WORK" && GOFLAGS=-mod=mod go mod download -json "golang.org/toolchain@v0.0.1-$ver.linux-$arch" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -f $dir/bin/go ]] || die "go mod download golang.org/toolchain@v0.0.1-$ver.linux-$arch gave no toolchain"
  echo "$dir"
}

main() {
  [[ $(id -u) == 0 ]] || die "run as root (debootstrap needs it)"
  docker info >/dev/null 2>&1 || die "no Docker engine answers (start it first, e.g. scripts/compose-test.sh)"
  base_image

  image north-cloud-offline/postgres:15 Dockerfile.postgres "" postgres-entrypoint.sh
  image north-cloud-offline/redis:7 Dockerfile.redis ""
  image north-cloud-offline/prometheus:2 Dockerfile.prometheus ""
  image north-cloud-offline/runtime:busybox Dockerfile.runtime "" runtime-accounts.sh

  local zip
  zip="$(es_zip)"
  mkdir -p "$WORK/ctx" && ln "$zip" "$WORK/ctx/elasticsearch.zip" 2>/dev/null || cp "$zip" "$WORK/ctx/elasticsearch.zip"
  BUILD_ARGS="--build-arg=ES_VERSION=$ES_VERSION" \
    image "north-cloud-offline/elasticsearch:$ES_VERSION" Dockerfile.elasticsearch "$ES_VERSION" elasticsearch-entrypoint.sh

  local goroot gover="${NC_OFFLINE_GO:-$(go env GOVERSION)}"
  goroot="$(go_toolchain "$gover")"
  mkdir -p "$WORK/ctx" && cp -r "$goroot" "$WORK/ctx/go"
  chmod -R u+w "$WORK/ctx/go" && chmod +x "$WORK/ctx/go/bin/"* "$WORK/ctx/go/pkg/tool/"*/*
  image "north-cloud-offline/golang:${gover#go}" Dockerfile.golang "$gover"

  local nodev
  command -v node >/dev/null && command -v npm >/dev/null || die "no node/npm on this machine to copy into the Node image"
  nodev="$(node --version)"
  mkdir -p "$WORK/ctx/node/bin" "$WORK/ctx/node/lib/node_modules"
  cp "$(readlink -f "$(command -v node)")" "$WORK/ctx/node/bin/node"
  cp -r "$(dirname "$(readlink -f "$(command -v npm)")")/.." "$WORK/ctx/node/lib/node_modules/npm"
  image "north-cloud-offline/node:${nodev#v}" Dockerfile.node "$nodev $(npm --version)"

  # The tags compose.offline.yml uses by default.
  docker tag "north-cloud-offline/golang:${gover#go}" north-cloud-offline/golang:local
  docker tag "north-cloud-offline/node:${nodev#v}" north-cloud-offline/node:local
  docker tag "north-cloud-offline/elasticsearch:$ES_VERSION" north-cloud-offline/elasticsearch:local
  log "done"
}

main "$@"
