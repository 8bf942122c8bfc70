#!/usr/bin/env bash
# Runs one test of the clang-tidy plugin in clang-tidy's own style (as its
# check_clang_tidy.py does): the checks the file's `// RUN:` line names are
# run by clang-tidy with the plugin loaded, and FileCheck matches the output
# against the file's CHECK-MESSAGES lines; any other warning or error fails.
# Usage: check_clang_tidy.sh CLANG_TIDY FILECHECK PLUGIN CUDA_INCLUDE FILE
set -euo pipefail
clang_tidy=$1 filecheck=$2 plugin=$3 cuda_include=$4 file=$5
checks=$(sed -n 's|^// RUN: ||p' "$file")
[ -n "$checks" ] || { echo "$file: no '// RUN: CHECKS' line" >&2; exit 2; }
output=$(mktemp)
trap 'rm -f "$output"' EXIT
"$clang_tidy" -load="$plugin" -checks="-*,$checks" "$file" -- \
  -x cuda --cuda-device-only -nocudainc -nocudalib -isystem "$cuda_include" \
  >"$output" 2>&1 || true
"$filecheck" -input-file="$output" "$file" -check-prefix=CHECK-MESSAGES \
  -implicit-check-not='{{warning|error}}:' --allow-empty
