#!/usr/bin/env bash
# The action's install step: puts shardproof on the job's PATH, either the
# one SHARDPROOF_BINARY names or one built from this checkout of shardproof
# (Debian packages by integrations/install-deps.sh, then CMake) into
# SHARDPROOF_BUILD.
set -euo pipefail

if [ -n "${SHARDPROOF_BINARY:-}" ]; then
  binary=$(realpath "$SHARDPROOF_BINARY")
  [ -x "$binary" ] || { echo "shardproof: $SHARDPROOF_BINARY is not a program" >&2; exit 2; }
else
  source_dir=$(cd "$(dirname "$0")/../.." && pwd)
  build=${SHARDPROOF_BUILD:?SHARDPROOF_BUILD names the build folder}
  bash "$source_dir/integrations/install-deps.sh"
  cmake -S "$source_dir" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target shardproof
  binary=$build/shardproof
fi
mkdir -p "${RUNNER_TEMP:-/tmp}/shardproof-bin"
ln -sf "$binary" "${RUNNER_TEMP:-/tmp}/shardproof-bin/shardproof"
echo "${RUNNER_TEMP:-/tmp}/shardproof-bin" >>"${GITHUB_PATH:?not in a GitHub job}"
"$binary" --version
