#!/usr/bin/env bash
# The API contract, checked against the running API: loads the demo data
# (examples/demo.jsonl) into a fresh folder, starts `crm serve --data` on it
# on a free loopback port, validates its /openapi.json
# (openapi-spec-validator), and runs schemathesis against it with the checks
# scripts/schemathesis.toml enables, examples, coverage, fuzzing and stateful phases (through the
# document's links), a fixed seed and a bounded budget. Half of the ids it
# sends are of real records (scripts/contract_seed.py), so that reads, updates
# and deletes by id reach their handlers, not only their 404. Any finding fails.
# Installs schemathesis into a cache folder when missing; stops the server
# whatever happens.
#
#   scripts/contract.sh                 # the CI run
#   CONTRACT_MAX_EXAMPLES=200 scripts/contract.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/dynamodb-local.sh

# The budget: examples per operation and a ceiling on the whole run (seconds).
max_examples=${CONTRACT_MAX_EXAMPLES:-25}
max_time=${CONTRACT_MAX_TIME:-180}
seed=${CONTRACT_SEED:-20261122}
# The checks are scripts/schemathesis.toml's; CONTRACT_CHECKS names others
# (on the command line, which also overrides that file's per-route settings).
checks=()
if [ -n "${CONTRACT_CHECKS:-}" ]; then checks=(--checks "$CONTRACT_CHECKS"); fi

# The dictionaries in the settings (scripts/contract_seed.py) are recent:
# 4.32 is the release they were written and checked against. A
# folder installed for other requirements is installed again.
venv="$cache/contract-venv"
requirements=("schemathesis>=4.32,<5" "openapi-spec-validator>=0.7,<0.8")
if [ ! -x "$venv/bin/schemathesis" ] || [ "$(cat "$venv/requirements" 2>/dev/null)" != "${requirements[*]}" ]; then
  echo "$0: installing schemathesis into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade "${requirements[@]}" >&2
  echo "${requirements[*]}" >"$venv/requirements"
fi

if [ "${CRM_IN_NAMESPACE:-}" != 1 ]; then
  cargo build --quiet -p crm
fi
enter_loopback_namespace "$0" "$@"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token="crm_contract$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
log="$cache/contract-serve.log"
crm="${CARGO_TARGET_DIR:-target}/debug/crm"
data="$cache/contract-data"
rm -rf "$data"
CRM_BOOTSTRAP_TOKEN="$token" "$crm" load examples/demo.jsonl --shift-times --data "$data" >"$log" 2>&1 \
  || { cat "$log" >&2; exit 1; }
# The limits as deployed, with room for the fuzzer's rate (tests/tests/limits.rs holds them).
CRM_BOOTSTRAP_TOKEN="$token" RUST_LOG=${CONTRACT_LOG:-warn} \
  CRM_RATE_LIMIT_TOKEN=1000000/10s CRM_RATE_LIMIT_WORKSPACE=1000000/10s CRM_WRITE_BUDGET=1000000/1s \
  "$crm" serve --data "$data" --port "$port" >>"$log" 2>&1 &
serve_pid=$!
trap 'kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; rm -rf "$data"' EXIT INT TERM
base="http://127.0.0.1:$port"
for _ in $(seq 1 150); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  kill -0 "$serve_pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done

echo "== openapi-spec-validator $base/openapi.json" >&2
python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1]).read())' \
  "$base/openapi.json" >"$cache/openapi.served.json"
"$venv/bin/openapi-spec-validator" "$cache/openapi.served.json"

# The id of the run's own token, which the hooks keep from being revoked.
token_id() {
  python3 -c 'import json, sys, urllib.request
request = urllib.request.Request(sys.argv[1] + "/v3/api-tokens", headers={"Authorization": "Bearer " + sys.argv[2]})
print(json.load(urllib.request.urlopen(request))["data"][0]["id"])' "$base" "$token"
}
own_token_id=$(token_id)
config="$cache/schemathesis.toml"
cp scripts/schemathesis.toml "$config"
python3 scripts/contract_seed.py "$base" "$token" >>"$config"
echo "== schemathesis (seed $seed, $max_examples examples, at most ${max_time}s)" >&2
CRM_CONTRACT_TOKEN="$token" CRM_CONTRACT_TOKEN_ID="$own_token_id" \
  SCHEMATHESIS_HOOKS=contract_hooks PYTHONPATH=scripts \
  "$venv/bin/schemathesis" --config-file "$config" run "$base/openapi.json" \
  "${checks[@]}" \
  --phases examples,coverage,fuzzing,stateful \
  --max-examples "$max_examples" --max-time "$max_time" \
  --seed "$seed" \
  --workers 2 --no-color \
  --suppress-health-check all "$@"
# The run must have called with a live token to the end (see contract_hooks.py).
token_id >/dev/null || { echo "$0: the run's token was revoked during the run" >&2; exit 1; }

# The second pass: every change the document has, sent with a read-only
# token (`*:read`). A 2xx is a failure (contract_hooks.no_write_with_a_read_only_token).
read_only=$(python3 -c 'import json, sys, urllib.request
body = json.dumps({"name": "contract read-only", "scopes": ["*:read"]}).encode()
request = urllib.request.Request(sys.argv[1] + "/v3/api-tokens", data=body, method="POST",
    headers={"Authorization": "Bearer " + sys.argv[2], "Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request))["token"])' "$base" "$token")
echo "== schemathesis with a read-only token: no change answers 2xx" >&2
CRM_CONTRACT_TOKEN="$read_only" CRM_CONTRACT_READ_ONLY=1 \
  SCHEMATHESIS_HOOKS=contract_hooks PYTHONPATH=scripts \
  "$venv/bin/schemathesis" --config-file "$config" run "$base/openapi.json" \
  --include-method-regex '^(POST|PUT|PATCH|DELETE)$' \
  --phases examples,coverage,fuzzing \
  --max-examples "${CONTRACT_READ_ONLY_EXAMPLES:-5}" --max-time 90 \
  --seed "$seed" \
  --workers 2 --no-color \
  --suppress-health-check all "$@"
