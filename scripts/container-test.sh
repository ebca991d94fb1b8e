#!/usr/bin/env bash
# The container image and compose.yaml, built and run: CI's container step (.ci/run calls it), and
# runnable alone as root on Debian 12 from a fresh clone with npm ci done. It installs podman and
# what it needs from Debian, sets podman up for this machine kind, makes the base images
# (scripts/container/make-base.sh: no image registry is reachable here), builds the image from the
# Containerfile and a PostgreSQL image for compose, then runs test/container/image.test.ts and
# test/container/compose.test.ts. Every step prints the seconds since the start.
#
# Kept between runs on one machine: the bases (podman's store, and the Debian tree under
# LEADHOOKS_CONTAINER_CACHE), the build's layers and its npm cache. A machine without them makes
# them: minutes more.
set -euo pipefail
cd "$(dirname "$0")/.."

started=$SECONDS
step() { printf '\n== container: %s (%ss)\n' "$*" "$((SECONDS - started))"; }

CACHE="${LEADHOOKS_CONTAINER_CACHE:-$HOME/.cache/leadhooks-container}"
IMAGE="${LEADHOOKS_IMAGE:-localhost/leadhooks:ci}"
POSTGRES_IMAGE="${POSTGRES_IMAGE:-localhost/leadhooks-test-postgres:15}"
MAX_IMAGE_BYTES=250000000

if [ "$(id -u)" != 0 ]; then
  echo "scripts/container-test.sh installs packages and runs podman as root: run it as root" >&2
  exit 1
fi

# podman-compose runs the compose file; dnsname lets its containers find each other by service
# name (postgres) on the project's network.
packages=(podman runc debootstrap podman-compose golang-github-containernetworking-plugin-dnsname)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  step "install from Debian: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

step "podman's settings for this machine kind"
# runc rather than crun, and limits a container may set here: podman's defaults (open files and
# processes raised to the kernel's maximum) fail in this machine's runtime with "error setting
# rlimit ... operation not permitted". Through CONTAINERS_CONF, for this script's podman only.
mkdir -p "$CACHE"
export CONTAINERS_CONF="$CACHE/containers.conf"
files="$(ulimit -Hn)"
cat >"$CONTAINERS_CONF" <<CONF
[containers]
default_ulimits = ["nofile=$files:$files", "nproc=4096:4096"]

[engine]
runtime = "runc"
CONF
podman --version
podman-compose version 2>/dev/null | grep -i 'podman-compose' || true

step "base images: Debian minbase (debootstrap) and Node from the npm registry"
bases="$(bash scripts/container/make-base.sh)"
read -r BASE BUILD_BASE <<<"$bases"
echo "runtime base $BASE, build base $BUILD_BASE"

# The PostgreSQL image (Debian's postgresql-15, for compose) builds meanwhile: it mostly downloads.
postgres_log="$CACHE/postgres-image.log"
podman build --format docker --network=host --build-arg BASE="$BASE" --tag "$POSTGRES_IMAGE" \
  test/container/postgres >"$postgres_log" 2>&1 &
postgres_build=$!

step "build the image $IMAGE (Containerfile, BUILD_BASE=$BUILD_BASE BASE=$BASE); meanwhile $POSTGRES_IMAGE"
previous="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
# The host's npm cache is lent to the build as an overlay (what the build writes there is
# dropped): filled by the installs before, it spares the image's npm ci its downloads.
npm_cache="$(npm config get cache)"
lent=()
if [ -d "$npm_cache" ]; then lent=(--volume "$npm_cache:/root/.npm:O"); fi
# The docker format keeps the HEALTHCHECK (the OCI format has none); the host network reaches the registry.
podman build --format docker --network=host "${lent[@]}" \
  --build-arg BASE="$BASE" --build-arg BUILD_BASE="$BUILD_BASE" --tag "$IMAGE" .
current="$(podman image inspect --format '{{.Id}}' "$IMAGE")"
# The image this one replaces, untagged now: not kept.
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
size="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
echo "image size: $((size / 1000000)) MB ($size bytes)"
if [ "$size" -ge "$MAX_IMAGE_BYTES" ]; then
  echo "the image is $size bytes, over $MAX_IMAGE_BYTES" >&2
  exit 1
fi

step "the PostgreSQL image for compose: $POSTGRES_IMAGE"
if ! wait "$postgres_build"; then
  tail -n 40 "$postgres_log" >&2
  echo "building $POSTGRES_IMAGE failed (above)" >&2
  exit 1
fi
tail -n 1 "$postgres_log"

# Both files at once (tap's two jobs): each names its containers, volumes and ports apart.
step "run the image (serve, CLI, delivery, SIGTERM, restart on the volume, worker) and compose.yaml"
LEADHOOKS_IMAGE="$IMAGE" POSTGRES_IMAGE="$POSTGRES_IMAGE" npx tap test/container/image.test.ts test/container/compose.test.ts

step "passed: the image ($((size / 1000000)) MB) and compose.yaml"
