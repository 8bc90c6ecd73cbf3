#!/usr/bin/env bash
# Measures cold start, latency and peak memory of the Lambda functions (release
# builds, as deployed) against DynamoDB Local, and writes docs/bench-results.md.
#
#   scripts/bench.sh                 # 10 cold starts x 100 warm calls per function
#   BENCH_ARGS="--cold-starts 3 --warm 20" scripts/bench.sh
#   BENCH_ARGS="--only reference,tags" BENCH_LOCAL=0 scripts/bench.sh   # a quick look
#   BENCH_LOCAL_ARGS="--sizes 10000,100000" scripts/bench.sh   # smaller stores
#   BENCH_LAMBDA=0 scripts/bench.sh   # the local API only; the Lambda tables are kept
#
# Then the local API (`crm serve`) on the embedded store: start-up and memory
# at 10k, 100k and 1M items, GET/create throughput on disk and in memory with
# the server's CPU per request, at 16, 64 and 256 connections each
# (bench/src/bin/local.rs; about 10 minutes), and the API's own cost per
# request in process,
# without the network (bench/src/bin/router.rs), webhooks from commit to a
# local receiver (bench/src/bin/webhooks.rs), and 10,000 contacts through
# batches against single creates (bench/src/bin/batch.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/dynamodb-local.sh

lambda=${BENCH_LAMBDA:-1}
out=docs/bench-results.md
local_heading='## The local API on the embedded store'
if [ "$lambda" != 1 ] && ! grep -qxF "$local_heading" "$out" 2>/dev/null; then
  echo "BENCH_LAMBDA=0 keeps the Lambda tables of $out, which has none to keep:" >&2
  echo "run scripts/bench.sh once in full first." >&2
  exit 1
fi
if [ "${CRM_IN_NAMESPACE:-}" != 1 ]; then
  # One build per function, as `cargo lambda build` does: built together, the
  # functions would share one feature set of `shared` (the SQS client in all).
  if [ "$lambda" = 1 ]; then
    dynamodb_local_install
    for f in functions/*/; do cargo build --release --quiet -p "$(basename "$f")"; done
  fi
  cargo build --release --quiet -p bench -p crm
fi
enter_loopback_namespace "$0" "$@"

if [ "$lambda" = 1 ]; then
  dynamodb_local_start
  export CRM_DYNAMODB_ENDPOINT="$DYNAMODB_LOCAL_ENDPOINT" CRM_TABLE=crm-bench
  export CRM_BOOTSTRAP_TOKEN=crm_bench_token_0123456789abcdef
  export AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1
  # Rate limits on, with room for the bench's pace (one token, up to ~2,000
  # calls a second): leases of 100 and 500 requests, one write each.
  export CRM_RATE_LIMIT_TOKEN=2000/1s CRM_RATE_LIMIT_WORKSPACE=10000/1s
  # The write budget on too, with room for the batch benches (their items a second).
  export CRM_WRITE_BUDGET=1000000/1s
  # As deployed, contacts and dashboards are given the job queue (never called here).
  export CRM_JOB_QUEUE_URL=http://127.0.0.1:9/000000000000/bench
  target/release/crm create-table
  target/release/crm bootstrap
  target/release/crm load examples/demo.jsonl --dynamodb >/dev/null
fi

{
  if [ "$lambda" != 1 ]; then
    # The Lambda tables of the last full run, as they were (checked above).
    sed -n "1,/^$local_heading\$/p" "$out" | sed '$d'
  else
    echo "# Benchmark results"
    echo
    echo "Written by \`scripts/bench.sh\` on $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m)."
    echo "Release builds (lto, codegen-units = 1, panic = abort, strip), each started"
    echo "against a local Lambda Runtime API (\`bench/\`) and DynamoDB Local, one cold"
    echo "start of every function in turn per round. In bold, the ratio to the"
    echo "reference function: a bare \`lambda_http\` + aws-config + one GetItem"
    echo "(\`bench/src/bin/reference.rs\`). Calls carry a workspace token of the current"
    echo "format, issued by the bench."
    echo
    target/release/bench --cold-starts 0
    echo
    echo "### The store a round trip away"
    echo
    echo "DynamoDB Local behind \`bench/src/delay.rs\`, which holds its traffic"
    echo "${BENCH_STORE_DELAY_MS:-1} ms each way (about 1 ms more: tokio's timer ticks in"
    echo "milliseconds), as DynamoDB is a few milliseconds from a function. Round trips"
    echo "are what a request waits for on AWS, so this table is the one the goals read."
    # shellcheck disable=SC2086
    target/release/bench ${BENCH_ARGS:-} --no-phone --store-delay-ms "${BENCH_STORE_DELAY_MS:-1}"
    echo
    echo "### DynamoDB Local on loopback"
    echo
    echo "No delay: DynamoDB Local answers in about 0.3 ms and serves concurrent requests"
    echo "on the same 2 cores as everything else, so reads side by side gain little here."
    # shellcheck disable=SC2086
    target/release/bench ${BENCH_ARGS:-} --no-phone
    echo
  fi
  echo "$local_heading"
  echo
  echo "\`crm serve\` (release) measured by \`bench-local\`: items loaded through the store"
  echo "(tag-shaped, 100 per transaction, fsynced), then the time from spawning the"
  echo "server to its accepting connections (a clean start, after a clean stop), and its"
  echo "resident memory after a list request. Throughput: keep-alive connections for"
  echo "a few seconds each (\`--seconds\`), at 16, 64 and 256 connections in turn;"
  echo "a server's throughput is its best level's, its capacity (the second table"
  echo "shows each level: a durable create waits for its group's synced write, so"
  echo "it takes more requests in flight than hello-JSON to reach it). Five rounds"
  echo "of disk, memory and hello-JSON in turn, medians shown, on the same 2 cores as the load"
  echo "generator, which takes its share of them: a ratio of throughputs is a ratio of"
  echo "(generator + server) costs per request. The server's CPU per request (the time"
  echo "its threads spent on a CPU, from \`/proc\`, over the requests served) is its own"
  echo "cost; its share-of-hello row is hello's CPU per request over the server's."
  echo "Each share is the median over the rounds of one round's ratio (the disk run"
  echo "over the same round's hello run)."
  echo
  if [ "${BENCH_LOCAL:-1}" = 1 ]; then
    # shellcheck disable=SC2086
    target/release/bench-local --crm target/release/crm ${BENCH_LOCAL_ARGS:-}
  fi
  echo
  echo "The API's own cost per request, without the network: the whole Router on the"
  echo "in-memory store, called in process on one thread (\`bench-router\`). The TCP"
  echo "figures above add the HTTP server, the kernel and the load generator on the same"
  echo "2 cores, and move by 10-20% from run to run; these move by a few percent."
  echo
  target/release/bench-router
  echo
  echo "### Webhooks from \`crm serve\`"
  echo
  echo "\`bench-webhooks\`: \`crm serve\` (release, on a folder, \`--webhooks-to-private\`)"
  echo "delivering \`tag.created\` to a receiver on loopback that answers 204. Latency is"
  echo "from a create's request being sent to its event's POST arriving: the commit,"
  echo "the follower's next look at the log (every 100 ms), the queue, the signed"
  echo "POST. First creates one at a time at a steady pace, then a burst from many"
  echo "connections, which the endpoint's delivery slots (\`CRM_WEBHOOK_CONCURRENCY\`)"
  echo "drain; events delivered per second is the burst over the time from its first"
  echo "request to its last arrival. Goal: p50 under 1 s at a steady pace."
  echo
  target/release/bench-webhooks --crm target/release/crm
  echo
  echo "### Batches against single creates"
  echo
  echo "\`bench-batch\`: 10,000 contacts created by \`crm serve\` (release) through 10,000"
  echo "\`POST /v3/contacts\` and through 100 \`POST /v3/contacts/batch\` of 100, each"
  echo "way over the same 4 connections. A batch applies each operation in its own"
  echo "transaction, as its single route does: it saves requests, not writes."
  echo
  target/release/bench-batch --crm target/release/crm
  # Sections written by hand or by scripts/package-sizes.sh are kept.
  if [ -f "$out" ]; then sed -n '/^<!-- kept by scripts\/bench.sh -->$/,$p' "$out"; fi
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
