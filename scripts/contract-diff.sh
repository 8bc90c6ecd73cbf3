#!/usr/bin/env bash
# The contract keeps its word: compares the generated document
# (docs/openapi.json, which tests/tests/openapi.rs keeps equal to the code's)
# with the last released one (docs/openapi.released.json) by Optic's
# breaking-change rules (`optic diff --check`, npm package @useoptic/optic),
# then fails on any breaking change that CHANGELOG.md's "## Unreleased"
# section does not list: a bullet containing **Breaking that names the
# operation (`POST /v3/api-tokens`) or the changed schema in backticks
# (`TagV3`). scripts/contract_diff.py groups Optic's findings and reads the
# changelog (`python3 scripts/contract_diff.py --self-test` checks it).
#
# Optic runs offline: no account, its telemetry off, in a private network
# namespace where this machine allows one. It is installed into the cache
# folder when missing, with every `ajv` forced to one version: as published,
# two copies meet in @stoplight/spectral-core and every run dies with
# "Error compiling schema ... Unexpected token ':'" (stoplightio/spectral#2946).
#
# When a release is cut, docs/openapi.released.json is replaced by that
# release's docs/openapi.json, and CHANGELOG.md's "## Unreleased" section
# becomes the release's.
#
#   scripts/contract-diff.sh
#   CONTRACT_DIFF_NEW=/tmp/other.json CONTRACT_DIFF_CHANGELOG=/tmp/CHANGELOG.md scripts/contract-diff.sh
#
# CONTRACT_DIFF_RELEASED, CONTRACT_DIFF_NEW and CONTRACT_DIFF_CHANGELOG name
# other files (absolute, or from the repository's root), to try the check on
# a document or a changelog changed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh

released=${CONTRACT_DIFF_RELEASED:-docs/openapi.released.json}
new=${CONTRACT_DIFF_NEW:-docs/openapi.json}
changelog=${CONTRACT_DIFF_CHANGELOG:-CHANGELOG.md}

optic_version=1.0.9
optic_home="$cache/optic-$optic_version"
package='{"private": true, "dependencies": {"@useoptic/optic": "'"$optic_version"'"}, "overrides": {"ajv": "8.20.0"}}'
if [ ! -x "$optic_home/node_modules/.bin/optic" ] || [ "$(cat "$optic_home/package.json" 2>/dev/null)" != "$package" ]; then
  need npm "Optic is installed from the npm package @useoptic/optic"
  echo "$0: installing Optic (@useoptic/optic@$optic_version) into $optic_home" >&2
  rm -rf "$optic_home"
  mkdir -p "$optic_home"
  printf '%s\n' "$package" >"$optic_home/package.json"
  (cd "$optic_home" && npm install --no-audit --no-fund --loglevel=error >&2)
fi

# What needs the network is done: the rest runs without one, where this
# machine allows a network namespace (as root, or through a user namespace).
if [ "${CRM_IN_NAMESPACE:-}" != 1 ] && command -v unshare >/dev/null && unshare --map-root-user --net true 2>/dev/null; then
  CRM_IN_NAMESPACE=1 exec unshare --map-root-user --net "$PWD/scripts/contract-diff.sh" "$@"
fi

for file in "$released" "$new" "$changelog"; do
  [ -f "$file" ] || { echo "$0: $file: no such file" >&2; exit 2; }
done
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }
from=$(absolute "$released")
to=$(absolute "$new")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# Optic skips these rules when `info.version` changes major (0.1.0 to 1.0.0
# would pass anything): a new major version is no excuse here.
cat >"$work/optic.yml" <<'YAML'
ruleset:
  - breaking-changes:
      skip_when_major_version_changes: false
YAML

# With CI set, Optic writes its verdicts to ci-run-details.json in the folder
# it runs in; it exits 1 when a check fails.
status=0
(cd "$work" && CI=true OPTIC_TELEMETRY_LEVEL=off NO_UPDATE_NOTIFIER=1 \
  "$optic_home/node_modules/.bin/optic" diff "$from" "$to" \
  --check --standard optic.yml --json >changelog.json 2>optic.log) || status=$?
if [ "$status" -gt 1 ] || [ ! -f "$work/ci-run-details.json" ]; then
  echo "$0: optic diff failed (exit $status):" >&2
  cat "$work/optic.log" >&2
  exit 2
fi
python3 scripts/contract_diff.py "$work/ci-run-details.json" "$released" "$new" "$changelog"
