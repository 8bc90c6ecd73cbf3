#!/usr/bin/env bash
# Lints the SAM template offline with `sam validate --lint`. Installs the AWS SAM
# CLI from PyPI into a virtual environment under the cache folder when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${CRM_CACHE_DIR:-$PWD/.cache}"
venv="$cache/sam-venv"
if [ ! -x "$venv/bin/sam" ]; then
  echo "lint-template.sh: installing aws-sam-cli into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check aws-sam-cli >&2
fi
SAM_CLI_TELEMETRY=0 "$venv/bin/sam" validate --lint --template-file infra/template.yaml --region us-east-1
