#!/usr/bin/env bash
# Installs the pinned framework releases of tests/frameworks/pins.txt from the
# Python Package Index into DEST/FOLDER (build/frameworks/megatron-core, ...),
# one `pip install --no-deps --target` per folder with Debian's python3 (the
# interpreter shardproof embeds): never into the system Python or the user's
# site-packages. ctest runs it first (the frameworks.install fixture of
# tests/CMakeLists.txt); the tests against real framework trees use DEST.
#
#   bash tests/frameworks/install.sh build/frameworks
#
# A folder that already holds exactly its pinned versions is left alone, so a
# second run needs no network. A folder whose tree the environment names
# instead (MEGATRON_ROOT for megatron-core, DEEPSPEED_ROOT for deepspeed,
# DEEPSPEED_PYTHON_PATH for deepspeed-deps) is not installed. Exits 1, saying why, when pip cannot
# install a pin (no route to the index, say): CI must not skip these tests.
set -euo pipefail

dest=${1:?usage: install.sh DEST [PINS]}
pins=${2:-$(dirname "$0")/pins.txt}
python=/usr/bin/python3

mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

# One installer at a time (two ctest runs in one build folder).
exec 9>"$dest/.lock"
flock 9

# The requirements of FOLDER, one a line, from the pins file.
requirements() {
  awk -v folder="$1" '$1 == folder { print $2 }' "$pins"
}

# Whether FOLDER holds exactly the distributions REQUIREMENT... pins (name and
# version, nothing more). Prints the difference with --explain.
holds_pins() {
  "$python" - "$@" <<'EOF'
import importlib.metadata as metadata, re, sys
explain = sys.argv[1] == "--explain"
folder, *pins = sys.argv[2:] if explain else sys.argv[1:]
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
want = {norm(name): version for name, version in (pin.split("==") for pin in pins)}
have = {norm(d.metadata["Name"]): d.version for d in metadata.distributions(path=[folder])}
if explain and have != want:
    print(f"{folder} holds {sorted(have.items())}, pinned {sorted(want.items())}",
          file=sys.stderr)
sys.exit(0 if have == want else 1)
EOF
}

if ! "$python" -m pip --version >/dev/null 2>&1; then
  echo "install.sh: $python has no pip: run integrations/install-deps.sh (python3-pip)" >&2
  exit 1
fi

status=0
for folder in $(awk '!/^#/ && NF { print $1 }' "$pins" | uniq); do
  case $folder in
    megatron-core) override=MEGATRON_ROOT ;;
    deepspeed) override=DEEPSPEED_ROOT ;;
    deepspeed-deps) override=DEEPSPEED_PYTHON_PATH ;;
    *) override= ;;
  esac
  if [ -n "$override" ] && [ -n "${!override:-}" ] &&
     [ "$(realpath -m "${!override}")" != "$dest/$folder" ]; then
    echo "$folder: not installed, $override=${!override} is used instead"
    continue
  fi
  mapfile -t wanted < <(requirements "$folder")
  if [ -d "$dest/$folder" ] && holds_pins "$dest/$folder" "${wanted[@]}"; then
    echo "$folder: ${wanted[*]} already installed in $dest/$folder"
    continue
  fi
  echo "$folder: installing ${wanted[*]} into $dest/$folder"
  staging="$dest/.$folder.new"
  rm -rf "$staging"
  # DS_BUILD_OPS=0: DeepSpeed's source distribution compiles no op (no CUDA
  # here; shardproof runs the Python code).
  if ! DS_BUILD_OPS=0 "$python" -m pip install --no-deps --target "$staging" \
      --prefer-binary --disable-pip-version-check --no-input --root-user-action=ignore \
      --no-warn-script-location --timeout 30 --retries 2 --quiet "${wanted[@]}"; then
    echo "install.sh: pip could not install ${wanted[*]} from the Python Package Index" \
         "(no network?). The tests against real framework trees need them: give the" \
         "machine access to the index, or point ${override:-the tests} at a local tree." >&2
    rm -rf "$staging"
    status=1
    continue
  fi
  if ! holds_pins --explain "$staging" "${wanted[@]}"; then
    echo "install.sh: $folder does not hold exactly its pins after pip install" >&2
    rm -rf "$staging"
    status=1
    continue
  fi
  rm -rf "$dest/$folder"
  mv "$staging" "$dest/$folder"
done
exit $status
