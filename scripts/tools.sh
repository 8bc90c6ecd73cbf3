# Sourced by the scripts: the deploy toolchain, installed from the project's own
# files into the cache folder when missing (nothing assumed on the machine but
# rustup, Python 3 and Node 20).
#
#   sam_install            .cache/sam-venv/bin/sam (aws-sam-cli, PyPI)
#   cargo_lambda_install   .cache/cargo-lambda-venv/bin on PATH (cargo-lambda,
#                          PyPI, with the Zig it cross-compiles with)
#   arm64_target_install   rustup's aarch64-unknown-linux-gnu standard library
#   cdk_install            infra/cdk/node_modules from its package-lock.json

cache="${CRM_CACHE_DIR:-$PWD/.cache}"
sam_venv="$cache/sam-venv"
cargo_lambda_venv="$cache/cargo-lambda-venv"

need() { command -v "$1" >/dev/null 2>&1 || { echo "$0: $1 is required ($2)" >&2; exit 1; }; }

# A PyPI package in a virtual environment of its own, unless its command is there.
venv_install() { # venv, requirement, command
  need python3 "$2 is installed from PyPI"
  if [ ! -x "$1/bin/$3" ]; then
    echo "$0: installing $2 into $1" >&2
    python3 -m venv "$1"
    "$1/bin/pip" install --quiet --disable-pip-version-check "$2" >&2
  fi
}

sam_install() { venv_install "$sam_venv" "aws-sam-cli>=1.140,<2" sam; }

cargo_lambda_install() {
  venv_install "$cargo_lambda_venv" "cargo-lambda>=1.8,<2" cargo-lambda
  case ":$PATH:" in *":$cargo_lambda_venv/bin:"*) ;; *) export PATH="$cargo_lambda_venv/bin:$PATH" ;; esac
}

# The functions run on Graviton (arm64); cargo-lambda builds for it with the
# target's standard library from rustup.
arm64_target_install() {
  need rustup "the arm64 standard library comes from rustup"
  if ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
    echo "$0: rustup target add aarch64-unknown-linux-gnu" >&2
    rustup target add aarch64-unknown-linux-gnu >&2
  fi
}

cdk_install() {
  need npm "the CDK app's toolchain comes from the npm registry"
  local dir=infra/cdk
  if [ ! "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    echo "$0: installing the CDK toolchain into $dir/node_modules" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
  fi
}
