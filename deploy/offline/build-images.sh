#!/usr/bin/env bash
# build-images.sh - builds what deploy/offline/compose.offline.yml runs, for a machine that
# reaches no image registry:
#
#   north-cloud-offline/debian:bookworm        debootstrap of Debian bookworm, `docker import`ed
#   north-cloud-offline/postgres:15            Debian's PostgreSQL 15 + an official-like entrypoint
#   north-cloud-offline/redis:7                Debian's Redis 7
#   north-cloud-offline/elasticsearch:<ver>    Maven Central's integ-test-zip on Debian's JDK 17
#   north-cloud-offline/prometheus:2           Debian's Prometheus
#   north-cloud-offline/alertmanager:0         Debian's Alertmanager
#   north-cloud-offline/runtime:busybox        Debian's static busybox (stands in for alpine)
#   north-cloud-offline/jaeger:1.76.0          Jaeger's all-in-one, the Go module proxy's source
#                                              (jaeger/go.mod pins it) built on this machine
#   deploy/offline/apps/<image>/               the services' binaries and the dashboard's dist/,
#                                              built on this machine (Dockerfile.app packs them)
#
# The services are not compiled in a golang (or node) image: `go build` runs here with the
# flags of the service Dockerfiles (CGO_ENABLED=0 -trimpath, each module on its own, as
# scripts/build.sh), so the host's
# Go build and module caches serve it, and the dashboard's dist/ is the host's `npm run build`
# (rebuilt only when its sources are newer). The stand-ins are built side by side; the runtime
# image needs no Debian base (busybox-static comes from the host's apt). An image whose inputs
# (its Dockerfile, files and versions) have not changed since it was built is kept; --force
# rebuilds all. Prints one line per image, with its seconds, to stderr.
#
# Jaeger is built like the services: `go build` here, with the host's Go caches, into
# NC_CACHE_DIR (one binary per jaeger/go.mod, go.sum and Go version), niced, beside the other
# stand-ins. With cold caches that is the slow part of a first run (about 3.5 minutes of two
# cores, 200 s of CPU, and 540 MB of modules); once built, nothing is compiled again.
#
# Usage: build-images.sh [--force] [all|stand-ins|apps]     (all)
#   stand-ins   the images above (no Go or npm build: test.sh builds them while Go tests run)
#   apps        deploy/offline/apps only
#
# Run as root (debootstrap) on Debian with a running Docker engine; the packages come from
# Debian's mirror, the Elasticsearch zip from Maven Central (cached in NC_CACHE_DIR, shared
# with scripts/services.sh). The machine's local CA certificates (/usr/local/share/ca-certificates,
# e.g. a TLS-intercepting proxy's) are in the runtime image's CA bundle, as on the host.
#
# Settings (environment):
#   NC_CACHE_DIR          download cache (debootstrap's packages too)   ($HOME/.cache/north-cloud)
#   NC_ES_VERSION         Elasticsearch version                         (8.19.21)
#   NC_DEBIAN_MIRROR      Debian mirror for debootstrap                 (http://deb.debian.org/debian)
set -euo pipefail
cd "$(dirname "$0")"

readonly CACHE_DIR="${NC_CACHE_DIR:-${HOME:-/root}/.cache/north-cloud}"
readonly ES_VERSION="${NC_ES_VERSION:-8.19.21}"
readonly MIRROR="${NC_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
readonly BASE=north-cloud-offline/debian:bookworm
# The version is jaeger/go.mod's (composetest checks that they agree).
readonly JAEGER_TAG=north-cloud-offline/jaeger:1.76.0
readonly LABEL=north-cloud.offline.inputs
ROOT="$(cd ../.. && pwd)"
readonly ROOT APPS_DIR="$PWD/apps"
FORCE=0 WHAT=all
for arg; do
  case $arg in
    --force) FORCE=1 ;;
    all | stand-ins | apps) WHAT=$arg ;;
    *) printf 'usage: build-images.sh [--force] [all|stand-ins|apps]\n' >&2; exit 2 ;;
  esac
done

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
  local hash rootfs start=$SECONDS
  # Bump the number when base_image changes what it builds.
  hash="bookworm-minbase-1 $MIRROR"
  if built "$BASE" "$hash"; then log "$BASE is up to date"; return 0; fi
  command -v debootstrap >/dev/null || {
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -q -y install --no-install-recommends debootstrap >&2 ||
      die "apt-get install debootstrap failed"
  }
  rootfs="$WORK/rootfs"
  mkdir -p "$CACHE_DIR/debootstrap"
  log "debootstrap bookworm from $MIRROR (about a minute)"
  debootstrap --variant=minbase --cache-dir="$CACHE_DIR/debootstrap" bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
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
  rm -rf "$rootfs"
  log "$BASE imported ($((SECONDS - start))s)"
}

# ctx TAG: the build context directory of TAG (the caller may put files into it first).
ctx() {
  local d="$WORK/ctx-${1//[\/:]/_}"
  mkdir -p "$d"
  echo "$d"
}

# image TAG DOCKERFILE EXTRA-HASH-INPUT [FILE...]: builds TAG from deploy/offline/DOCKERFILE
# with the FILEs (of this directory) and what the caller put into `ctx TAG` as its context.
# Images FROM the Debian base hash its id as one of their inputs.
image() {
  local tag=$1 dockerfile=$2 extra=$3 hash dir start=$SECONDS
  shift 3
  dir="$(ctx "$tag")"
  cp "$dockerfile" "$@" "$dir/"
  if grep -q '^FROM \${BASE_IMAGE}' "$dockerfile"; then extra+=" $(docker image inspect -f '{{.Id}}' "$BASE")"; fi
  # Every file of the context but the Elasticsearch zip (its version is in EXTRA).
  hash="$( (cd "$dir" && find . -type f ! -name '*.zip' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum; printf '%s\n' "$extra") | sha256sum | cut -c1-16)"
  if built "$tag" "$hash"; then
    log "$tag is up to date"
    return 0
  fi
  log "building $tag"
  docker build -q --label "$LABEL=$hash" --build-arg "BASE_IMAGE=$BASE" ${BUILD_ARGS:+$BUILD_ARGS} \
    -t "$tag" -f "$dir/$dockerfile" "$dir" >"$dir.log" 2>&1 ||
    { tail -n 30 "$dir.log" >&2; die "docker build of $tag failed"; }
  log "$tag built ($((SECONDS - start))s)"
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

# runtime_image: Debian's static busybox, from the package the host's apt fetches (kept in
# NC_CACHE_DIR), and the host's CA bundle.
runtime_image() {
  local tag=north-cloud-offline/runtime:busybox dir deb
  dir="$(ctx "$tag")"
  local debs=("$CACHE_DIR"/debs/busybox-static_*.deb)
  if [[ ! -f ${debs[-1]} ]]; then
    mkdir -p "$CACHE_DIR/debs"
    (cd "$CACHE_DIR/debs" && { apt-get download -q busybox-static >&2 || { apt-get -q update >&2 && apt-get download -q busybox-static >&2; }; }) ||
      die "apt-get download busybox-static failed"
    debs=("$CACHE_DIR"/debs/busybox-static_*.deb)
  fi
  deb=${debs[-1]}
  dpkg-deb -x "$deb" "$WORK/busybox" && cp "$WORK/busybox/bin/busybox" "$dir/busybox" || die "no busybox in $deb"
  cp /etc/ssl/certs/ca-certificates.crt "$dir/" || die "no CA bundle at /etc/ssl/certs/ca-certificates.crt"
  image "$tag" Dockerfile.runtime "" runtime-accounts.sh
}

# jaeger_binary: Jaeger's all-in-one (the tool jaeger/go.mod pins), built with the flags of
# the service binaries into NC_CACHE_DIR, then linked into the image's context.
jaeger_binary() {
  local key bin version start=$SECONDS
  command -v go >/dev/null || die "no go on this machine to build Jaeger"
  key="$( (cat jaeger/go.mod jaeger/go.sum && go version) | sha256sum | cut -c1-16)"
  bin="$CACHE_DIR/jaeger/all-in-one-$key"
  if [[ ! -x $bin ]]; then
    version="$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2 }' jaeger/go.mod)"
    [[ -n $version ]] || die "jaeger/go.mod requires no github.com/jaegertracing/jaeger"
    log "building Jaeger all-in-one $version (with cold Go caches about 4 minutes)"
    mkdir -p "$CACHE_DIR/jaeger"
    (cd jaeger && CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false nice -n 10 \
      go build -trimpath -ldflags="-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=$version" \
      -o "$bin.tmp" github.com/jaegertracing/jaeger/cmd/all-in-one) || die "go build of Jaeger all-in-one failed"
    mv "$bin.tmp" "$bin"
    find "$CACHE_DIR/jaeger" -name 'all-in-one-*' ! -name "all-in-one-$key" -delete
    log "Jaeger all-in-one built ($((SECONDS - start))s)"
  fi
  local dir
  dir="$(ctx "$JAEGER_TAG")"
  ln -f "$bin" "$dir/all-in-one" 2>/dev/null || cp "$bin" "$dir/all-in-one"
}

stand_ins() {
  local zip dir
  zip="$(es_zip)"
  dir="$(ctx "north-cloud-offline/elasticsearch:$ES_VERSION")"
  ln "$zip" "$dir/elasticsearch.zip" 2>/dev/null || cp "$zip" "$dir/elasticsearch.zip"

  # The runtime image needs no base: it builds while debootstrap runs, and Jaeger compiles.
  runtime_image >"$WORK/runtime.log" 2>&1 &
  local -A jobs=([runtime]=$!)
  jaeger_binary >"$WORK/jaeger.log" 2>&1 &
  jobs[jaeger]=$!
  base_image
  image north-cloud-offline/postgres:15 Dockerfile.postgres "" postgres-entrypoint.sh >"$WORK/postgres.log" 2>&1 &
  jobs[postgres]=$!
  image north-cloud-offline/redis:7 Dockerfile.redis "" >"$WORK/redis.log" 2>&1 &
  jobs[redis]=$!
  image north-cloud-offline/prometheus:2 Dockerfile.prometheus "" >"$WORK/prometheus.log" 2>&1 &
  jobs[prometheus]=$!
  image north-cloud-offline/alertmanager:0 Dockerfile.alertmanager "" >"$WORK/alertmanager.log" 2>&1 &
  jobs[alertmanager]=$!
  BUILD_ARGS="--build-arg=ES_VERSION=$ES_VERSION" \
    image "north-cloud-offline/elasticsearch:$ES_VERSION" Dockerfile.elasticsearch "$ES_VERSION" elasticsearch-entrypoint.sh \
    >"$WORK/elasticsearch.log" 2>&1 &
  jobs[elasticsearch]=$!
  local name failed=()
  for name in "${!jobs[@]}"; do
    wait "${jobs[$name]}" || failed+=("$name")
    cat "$WORK/$name.log" >&2
  done
  ((${#failed[@]} == 0)) || die "building ${failed[*]} failed"
  # On the runtime stand-in: its id is one of the inputs.
  image "$JAEGER_TAG" Dockerfile.jaeger "$(docker image inspect -f '{{.Id}}' north-cloud-offline/runtime:busybox)"
  # The tag compose.offline.yml uses.
  docker tag "north-cloud-offline/elasticsearch:$ES_VERSION" north-cloud-offline/elasticsearch:local
}

# apps: deploy/offline/apps/<image>/, the /app of each service image: its binaries, built
# like the service Dockerfiles build them, and the dashboard's production build.
apps() {
  local start=$SECONDS out="$APPS_DIR.tmp" m
  command -v go >/dev/null || die "no go on this machine to build the services"
  rm -rf "$out"
  for m in classifier publisher index-manager dashboard/server; do
    mkdir -p "$out/${m%/server}"
    (cd "$ROOT/$m" && CGO_ENABLED=0 GOWORK=off GOTOOLCHAIN=local GOFLAGS=-buildvcs=false \
      go build -trimpath -ldflags='-s -w' -o "$out/${m%/server}/" ./cmd/...) || die "go build of $m failed"
  done
  command -v npm >/dev/null || die "no npm on this machine to build the dashboard"
  (
    cd "$ROOT/dashboard"
    if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
      npm ci --no-audit --no-fund >&2
    fi
    # The dashboard stage of the test command built dist/ already, unless a source is newer.
    if [[ ! -f dist/index.html || -n $(find src public index.html package.json package-lock.json vite.config.* tsconfig*.json \
      -newer dist/index.html -print -quit 2>/dev/null) ]]; then
      npm run build >&2
    fi
  ) || die "the dashboard's npm ci / npm run build failed"
  cp -r "$ROOT/dashboard/dist" "$out/dashboard/dist"
  rm -rf "$APPS_DIR" && mv "$out" "$APPS_DIR"
  log "deploy/offline/apps: binaries and dist built ($((SECONDS - start))s)"
}

main() {
  [[ $(id -u) == 0 ]] || die "run as root (debootstrap needs it)"
  docker info >/dev/null 2>&1 || die "no Docker engine answers (start it first, e.g. scripts/compose-test.sh)"
  [[ $WHAT == apps ]] || stand_ins
  [[ $WHAT == stand-ins ]] || apps
  log "done"
}

main "$@"
