#!/usr/bin/env bash
# Builds what ships, the way a deploying team builds it, from this checkout:
#   1. `sam build` of every function of infra/template.yaml (SAM's Rust builder
#      runs `cargo lambda build --arm64 --bin <Binary>` in each CodeUri);
#   2. the CDK app synthesized with bundling on (cargo-lambda-cdk runs the same
#      command in each manifestPath's folder), into .cache/cdk-bundled.
# Then checks that each of them left an arm64 `bootstrap` for every function.
# Debug builds by default (SAM_BUILD_MODE=debug, CRM_CDK_PROFILE=dev): what is
# checked is the wiring (which folder, which binary), and the second build
# reuses the first one's artifacts; DEPLOY_BUILD_MODE=release builds as
# `sam build` and `cdk deploy` do by default (LTO: much slower).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh
need cargo "install Rust with rustup"

mode="${DEPLOY_BUILD_MODE:-debug}"
case "$mode" in
  debug) sam_mode=debug cdk_profile=dev ;;
  release) sam_mode=release cdk_profile=release ;;
  *) echo "$0: DEPLOY_BUILD_MODE is debug or release" >&2; exit 2 ;;
esac

arm64_target_install
sam_install
cargo_lambda_install
cdk_install

sam_out="$cache/sam-build"
cdk_out="$cache/cdk-bundled"
rm -rf "$sam_out" "$cdk_out"
# The outputs are copies of target/lambda (about 60 MB a function in debug):
# removed whatever happens, CI's disk is not large.
trap 'rm -rf "$sam_out" "$cdk_out"' EXIT

echo "$0: sam build ($mode) of every function" >&2
SAM_CLI_TELEMETRY=0 SAM_BUILD_MODE="$sam_mode" "$sam_venv/bin/sam" build \
  --template-file infra/template.yaml --build-dir "$sam_out" >&2

echo "$0: the CDK app with bundling on ($cdk_profile)" >&2
(cd infra/cdk && CRM_CDK_BUNDLE=1 CRM_CDK_PROFILE="$cdk_profile" CDK_OUTDIR="$cdk_out" npx tsx bin/app.ts >&2)

python3 - "$sam_out" "$cdk_out" <<'PY'
import json, os, re, sys
sam_out, cdk_out = sys.argv[1], sys.argv[2]

def arm64(path):
    with open(path, "rb") as f:
        head = f.read(20)
    # ELF, 64-bit, little-endian, e_machine 183 (AArch64)
    return head[:4] == b"\x7fELF" and head[4] == 2 and int.from_bytes(head[18:20], "little") == 183

template = open("infra/template.yaml").read()
functions = re.findall(r"^  (\w+Function):\n    Type: AWS::Serverless::Function", template, re.M)
missing, bad = [], []
for f in functions:
    path = os.path.join(sam_out, f, "bootstrap")
    if not os.path.exists(path):
        missing.append(f)
    elif not arm64(path):
        bad.append(f)
cdk = json.load(open(os.path.join(cdk_out, "CrmApi.template.json")))
bundled = []
for name, r in cdk["Resources"].items():
    if r["Type"] != "AWS::Lambda::Function":
        continue
    asset = os.path.join(cdk_out, "asset." + r["Properties"]["Code"]["S3Key"].removesuffix(".zip"), "bootstrap")
    if not os.path.exists(asset):
        missing.append("CDK " + name)
    elif not arm64(asset):
        bad.append("CDK " + name)
    else:
        bundled.append(name)
if missing or bad or len(bundled) != len(functions):
    sys.exit(f"deploy-build: missing {missing}, not arm64 {bad}, CDK bundled {len(bundled)} of {len(functions)}")
print(f"deploy-build: sam build and the CDK bundling each made {len(functions)} arm64 bootstraps")
PY
