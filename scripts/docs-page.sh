#!/usr/bin/env bash
# The API reference page in a real browser: starts `crm serve --in-memory` on
# a free loopback port, loads /docs in headless Chromium (Debian's `chromium`,
# installed with apt when missing) with no network but loopback, reads the
# rendered DOM and fails unless every operation of /openapi.json is listed;
# then saves a screenshot to docs/api-reference.png (with --screenshot).
#
#   scripts/docs-page.sh               # the check
#   scripts/docs-page.sh --screenshot  # the check, and a new screenshot
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/dynamodb-local.sh

if ! command -v chromium >/dev/null; then
  echo "$0: installing chromium (apt)" >&2
  if [ "$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi
  $sudo apt-get install -y -q chromium >/dev/null 2>&1 ||
    { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q chromium >/dev/null; }
fi
if [ "${CRM_IN_NAMESPACE:-}" != 1 ]; then
  cargo build --quiet -p crm
fi
enter_loopback_namespace "$0" "$@"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
profile=$(mktemp -d)
CRM_BOOTSTRAP_TOKEN=crm_docs_page_0123456789 RUST_LOG=warn \
  "${CARGO_TARGET_DIR:-target}"/debug/crm serve --in-memory --port "$port" >"$cache/docs-page-serve.log" 2>&1 &
serve_pid=$!
trap 'kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; rm -rf "$profile"' EXIT INT TERM
for _ in $(seq 1 150); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

# The flags keep Chromium from reaching for Google's hosts (there is no network).
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$profile" --virtual-time-budget=15000)
url="http://127.0.0.1:$port/docs"
"${chrome[@]}" --dump-dom "$url" 2>/dev/null >"$cache/docs-page.html"

python3 - "$cache/docs-page.html" "http://127.0.0.1:$port/openapi.json" <<'PY'
import json, sys, urllib.request
dom = open(sys.argv[1], encoding="utf-8").read().replace("\\", "")
document = json.load(urllib.request.urlopen(sys.argv[2]))
# Swagger UI renders each operation as an element with the id
# operations-<tag>-<operationId> (CSS-escaped, unescaped above).
operations = [(op["tags"][0], op["operationId"]) for item in document["paths"].values() for op in item.values()]
missing = [op for tag, op in operations if f'id="operations-{tag}-{op}"' not in dom]
print(f"the page lists {len(operations) - len(missing)} of {len(operations)} operations", file=sys.stderr)
if missing:
    sys.exit(f"not on the page: {missing[:10]}")
PY

if [ "${1:-}" = --screenshot ]; then
  "${chrome[@]}" --window-size=1280,1600 --screenshot="$PWD/docs/api-reference.png" "$url" 2>/dev/null
  echo "$0: docs/api-reference.png" >&2
fi
