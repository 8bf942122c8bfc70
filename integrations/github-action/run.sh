#!/usr/bin/env bash
# The action's check step: `shardproof check --diff BASE`, annotations as
# GitHub workflow commands on standard output and SARIF into SHARDPROOF_SARIF;
# the step fails with shardproof's exit status (after writing both).
set -uo pipefail

args=(check --format "github,sarif:${SHARDPROOF_SARIF:-shardproof.sarif}")
[ -n "${SHARDPROOF_BASE:-}" ] && args+=(--diff "$SHARDPROOF_BASE")
[ -n "${SHARDPROOF_BASELINE:-}" ] && args+=(--baseline "$SHARDPROOF_BASELINE")
# Targets and further options are words, as on a command line.
read -r -a targets <<<"${SHARDPROOF_TARGETS:-}"
read -r -a extra <<<"${SHARDPROOF_ARGS:-}"
shardproof "${args[@]}" "${targets[@]}" "${extra[@]}"
status=$?
echo "exit-code=$status" >>"${GITHUB_OUTPUT:-/dev/null}"
exit $status
