#!/usr/bin/env bash
# Lints the SAM template offline with `sam validate --lint`. Installs the AWS SAM
# CLI from PyPI into a virtual environment under the cache folder when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh
sam_install
SAM_CLI_TELEMETRY=0 "$sam_venv/bin/sam" validate --lint --template-file infra/template.yaml --region us-east-1
