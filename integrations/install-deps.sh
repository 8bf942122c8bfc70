#!/usr/bin/env bash
# Installs shardproof's build and test dependencies from Debian's archive.
# Idempotent: does nothing when every package is already present.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  llvm-19-dev libclang-19-dev clang-19   # LibTooling, for the CUDA frontend
  libz3-dev libgmp-dev                   # prover
  python3-dev python3-numpy              # embedded CPython and its arrays
  python3-packaging python3-typing-extensions  # imported by framework code
  python3-yaml                           # Megatron launch files (model_config.yaml)
  python3-pydantic                       # DeepSpeed's config (1.x: trees to mid-2024)
  python3-torch                          # real PyTorch: ground truth in tests
  python3-pip                            # pinned framework releases for tests (tests/frameworks)
  googletest libgtest-dev libgmock-dev
  clang-tidy-19 llvm-19-tools             # the clang-tidy plugin and its tests
  nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev
  libtomlplusplus-dev                    # pyproject.toml [tool.shardproof]
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
  --no-install-recommends "${missing[@]}" >/dev/null
