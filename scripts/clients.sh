#!/usr/bin/env bash
# The generated clients, held to the document and the running API: generates
# a Python client (openapi-python-client) and TypeScript types
# (openapi-typescript, for openapi-fetch) from docs/openapi.json with the
# versions pinned in clients/, fails on any generator warning or operation
# left out, compiles the TypeScript flow and a file of calls that must not
# compile under `tsc --strict`, then runs both flows against `crm serve
# --in-memory` on a free loopback port. Installs the generators into the
# cache folder and clients/typescript/node_modules when missing; stops the
# server whatever happens.
#
#   scripts/clients.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/dynamodb-local.sh

venv="$cache/clients-venv"
requirements=$(cat clients/python/requirements.txt)
if [ ! -x "$venv/bin/openapi-python-client" ] || [ "$(cat "$venv/requirements" 2>/dev/null)" != "$requirements" ]; then
  echo "$0: installing the Python client generator into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r clients/python/requirements.txt python-dateutil >&2
  echo "$requirements" >"$venv/requirements"
fi
if [ ! -d clients/typescript/node_modules ]; then
  echo "$0: installing the TypeScript toolchain into clients/typescript/node_modules" >&2
  (cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error >&2)
fi

# What needs the network is done: into a loopback-only namespace, where it can.
if [ "${CRM_IN_NAMESPACE:-}" != 1 ]; then
  cargo build --quiet -p crm
fi
enter_loopback_namespace "$0" "$@"

work=$(mktemp -d)
serve_pid=
cleanup() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "== the Python client (openapi-python-client)" >&2
generated=$("$venv/bin/openapi-python-client" generate --path docs/openapi.json \
  --output-path "$work/python" --config clients/python/config.yaml 2>&1) || { echo "$generated" >&2; exit 1; }
if grep -qiE "warning|error|skipping" <<<"$generated"; then
  echo "$generated" >&2
  echo "$0: the Python generator warned" >&2
  exit 1
fi
python3 - "$work/python/crm_api_client/api" <<'PY'
import json, pathlib, sys
document = json.load(open("docs/openapi.json"))
operations = sum(1 for item in document["paths"].values() for m in item if m in ("get", "post", "put", "patch", "delete"))
generated = [p for p in pathlib.Path(sys.argv[1]).rglob("*.py") if p.name != "__init__.py"]
if len(generated) != operations:
    sys.exit(f"the Python client has {len(generated)} of the document's {operations} operations")
print(f"{len(generated)} of {operations} operations", file=sys.stderr)
PY

echo "== the TypeScript types (openapi-typescript), tsc --strict" >&2
(
  cd clients/typescript
  mkdir -p generated
  generated=$(npx --no-install openapi-typescript ../../docs/openapi.json -o generated/schema.d.ts 2>&1)
  if grep -qiE "warn|error" <<<"$generated"; then echo "$generated" >&2; exit 1; fi
  npx --no-install tsc -p .
)

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token="crm_clients$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
crm="${CARGO_TARGET_DIR:-target}/debug/crm"
start() {
  CRM_BOOTSTRAP_TOKEN="$token" RUST_LOG=warn "$crm" serve --in-memory --webhooks-to-private --port "$port" >"$work/serve.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 1 150); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$0: crm serve did not listen" >&2
  exit 1
}
stop() {
  kill "$serve_pid" 2>/dev/null || true
  wait "$serve_pid" 2>/dev/null || true
  serve_pid=
}

echo "== the Python flow" >&2
start
PYTHONPATH="$work/python" "$venv/bin/python" clients/python/flow.py "http://127.0.0.1:$port" "$token"
stop

echo "== the TypeScript flow" >&2
start
(cd clients/typescript && npx --no-install tsx flow.ts "http://127.0.0.1:$port" "$token")
stop
