#!/usr/bin/env bash
# The MCP endpoint (POST /mcp) through the official Python MCP SDK: runs
# scripts/mcp_flow.py (initialize, the tool listing and its annotations, a
# keyed create twice, search and read, a refused input, a `*:read` token's
# listing and refusal, the 401 without a token) against `crm serve` twice, on
# the embedded store in memory and on DynamoDB Local, each on a free loopback
# port. Installs the SDK (`mcp`, pinned) into the cache folder and DynamoDB
# Local when missing; stops every server whatever happens.
#
#   scripts/mcp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/dynamodb-local.sh

venv="$cache/mcp-venv"
requirements="mcp==2.3.0"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/requirements" 2>/dev/null)" != "$requirements" ]; then
  echo "$0: installing the Python MCP SDK ($requirements) into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$requirements" >&2
  echo "$requirements" >"$venv/requirements"
fi

# What needs the network is done: into a loopback-only namespace, where it can.
if [ "${CRM_IN_NAMESPACE:-}" != 1 ]; then
  dynamodb_local_install
  cargo build --quiet -p crm
fi
enter_loopback_namespace "$0" "$@"

work=$(mktemp -d)
serve_pid=
stop() {
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  serve_pid=
}
cleanup() {
  stop
  dynamodb_local_stop
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

token="crm_mcp$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
crm="${CARGO_TARGET_DIR:-target}/debug/crm"
# Starts `crm serve` with the given options on a free port; sets base.
start() {
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  CRM_BOOTSTRAP_TOKEN="$token" RUST_LOG=warn "$crm" serve "$@" --port "$port" >"$work/serve.log" 2>&1 &
  serve_pid=$!
  base="http://127.0.0.1:$port"
  for _ in $(seq 1 150); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$0: crm serve did not listen" >&2
  exit 1
}
flow() {
  "$venv/bin/python" scripts/mcp_flow.py "$base" "$token" || { echo "$0: the server's log:" >&2; cat "$work/serve.log" >&2; exit 1; }
}

echo "== the MCP flow on the embedded store (crm serve --in-memory)" >&2
start --in-memory
flow
stop

echo "== the MCP flow on DynamoDB Local (crm serve --dynamodb)" >&2
dynamodb_local_start
trap cleanup EXIT INT TERM # dynamodb_local_start sets a trap of its own
export CRM_DYNAMODB_ENDPOINT="$DYNAMODB_LOCAL_ENDPOINT" CRM_TABLE=crm-mcp
export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
"$crm" create-table >&2
start --dynamodb # which bootstraps workspace 1 with $token
flow
stop
