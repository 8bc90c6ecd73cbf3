#!/usr/bin/env bash
# The instruction gate: what one request costs the API in process, counted by
# Valgrind's callgrind (instructions, which a loaded or noisy machine cannot
# move), for a GET by id, a list page, a create and a batch of 100 creates,
# against the baseline checked in as bench/gate-baseline.json. Fails when one
# grows by more than 25%. Run by .ci/run.
#
#   scripts/gate.sh             # measure and compare
#   scripts/gate.sh --update    # measure and write the baseline (say why in
#                               # the commit's body: CI checks that it does)
#
# The workload is bench/src/bin/gate.rs, built in the dev profile of the
# tests (nothing more to compile in CI): its counts include debug builds'
# checks, so they are a gate, not the figures of docs/bench-results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh
need cargo "install Rust with rustup"
if ! command -v valgrind >/dev/null 2>&1; then
  echo "$0: installing valgrind (Debian's package)" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y -q valgrind >&2; else sudo apt-get install -y -q valgrind >&2; fi
fi

baseline=bench/gate-baseline.json
update=${1:-}
cargo build --quiet -p bench --bin bench-gate
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for kind in get list create batch; do
  requests=20
  [ "$kind" = batch ] && requests=2
  valgrind --tool=callgrind --callgrind-out-file="$out/$kind.out" --collect-atstart=no \
    --toggle-collect='bench_gate::measured' target/debug/bench-gate "$kind" --requests "$requests" \
    >"$out/$kind.n" 2>"$out/$kind.log" || { cat "$out/$kind.log" >&2; exit 1; }
done

python3 - "$out" "$baseline" "$update" <<'PY'
import json, os, re, sys
out, baseline_path, update = sys.argv[1], sys.argv[2], sys.argv[3]
LIMIT = 1.25
measured = {}
for kind in ["get", "list", "create", "batch"]:
    totals = re.search(r"^totals: (\d+)", open(f"{out}/{kind}.out").read(), re.M)
    requests = int(open(f"{out}/{kind}.n").read().split()[-1])
    measured[kind] = int(totals.group(1)) // requests
if update == "--update":
    json.dump(measured, open(baseline_path, "w"), indent=2)
    open(baseline_path, "a").write("\n")
    print(f"gate: wrote {baseline_path}: {measured}")
    sys.exit(0)
baseline = json.load(open(baseline_path))
print("| request | baseline (instructions) | now | ratio |")
print("|---|---|---|---|")
over = []
for kind, now in measured.items():
    was = baseline[kind]
    ratio = now / was
    print(f"| {kind} | {was:,} | {now:,} | {ratio:.2f} |")
    if ratio > LIMIT:
        over.append(f"{kind} {ratio:.2f}x")
if over:
    sys.exit(f"gate: more than {LIMIT:.2f}x the baseline: {', '.join(over)}. If that is meant, "
             f"run scripts/gate.sh --update and say why in the commit's body.")
print("gate: every request within 1.25x of its baseline")
PY

# A baseline changed by the last commit says why in that commit's body.
if [ -z "$update" ] && git rev-parse --verify -q HEAD~1 >/dev/null && \
   ! git diff --quiet HEAD~1 HEAD -- "$baseline"; then
  if ! git log -1 --format=%b | grep -qi "gate"; then
    echo "gate: the last commit changes $baseline; its body must say why (a line naming the gate)" >&2
    exit 1
  fi
fi
