#!/usr/bin/env bash
# The benches of `crm serve` run end to end, small and in the dev profile of
# the tests, so that one that stops working shows in CI and not in the next
# session that measures (bench-local once stopped at its load for days,
# unseen). Nothing here is timed against a goal: the figures are thrown away.
# Run by .ci/run; the Lambda bench (scripts/bench.sh) needs release builds of
# every function and is not run here.
#
#   scripts/bench-smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh
need cargo "install Rust with rustup"

cargo build --quiet -p crm -p bench
crm=target/debug/crm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
  echo "-- $*"
  "$@" >"$work/out" 2>&1 || { cat "$work/out" >&2; echo "$0: $1 failed" >&2; exit 1; }
  # Each prints its table; a run that printed none did not measure.
  grep -q '^|' "$work/out" || { cat "$work/out" >&2; echo "$0: $1 printed no table" >&2; exit 1; }
}
run target/debug/bench-batch --crm "$crm" --contacts 200 --connections 2
run target/debug/bench-local --crm "$crm" --sizes 1000 --rounds 1 --seconds 1 \
  --connections 4 --work "$work/local"
run target/debug/bench-router --requests 200
run target/debug/bench-webhooks --crm "$crm" --paced 5 --rate 50 --burst 20 --connections 2
echo "bench-smoke: every bench ran"
