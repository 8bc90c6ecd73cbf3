#!/usr/bin/env bash
# Builds every function as deployed (`cargo lambda build --release --arm64`,
# zips) and writes each zip's size into docs/bench-results.md ("Deployment
# packages"), failing when one is over 5 MB. Installs cargo-lambda (PyPI, with
# its zig) into a cache folder when missing. Slow (a release build of every
# function for arm64): not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/tools.sh
arm64_target_install
cargo_lambda_install

functions=$(sed -n 's/^ *Binary: \([a-z-]*\)$/\1/p' infra/template.yaml)
packages=()
for f in $functions; do packages+=(-p "$f"); done
started=$(date +%s)
cargo lambda build --release --arm64 --output-format zip "${packages[@]}" >&2
seconds=$(( $(date +%s) - started ))

limit=$((5 * 1024 * 1024))
out=docs/bench-results.md
table=$(mktemp)
over=
{
  echo "<!-- kept by scripts/bench.sh -->"
  echo "## Deployment packages"
  echo
  echo "Written by \`scripts/package-sizes.sh\` on $(date -u +%Y-%m-%d): \`cargo lambda build --release"
  echo "--arm64 --output-format zip\` of every function ($seconds s on $(nproc) cores, from a warm"
  echo "\`target/\`). The limit is 5 MB a zip."
  echo
  echo "| function | zip | bootstrap |"
  echo "|---|---|---|"
  for f in $functions; do
    zip="target/lambda/$f/bootstrap.zip"
    size=$(stat -c %s "$zip")
    raw=$(unzip -l "$zip" | awk '/bootstrap$/ {print $1}')
    printf '| %s | %.2f MB | %.2f MB |\n' "$f" "$(echo "$size / 1048576" | bc -l)" "$(echo "$raw / 1048576" | bc -l)"
    [ "$size" -le "$limit" ] || over="$over $f"
  done
  echo
  echo "The AWS SDK, rustls and the HTTP stack are most of each binary. \`api-docs\`"
  echo "configures no SDK client; it carries Swagger UI's 4 MB of script, style sheet"
  echo "and source maps instead. \`contacts\`, \`workspaces\` and \`reports\` carry the"
  echo "phone-number metadata."
} >"$table"
# Replace the section (from its heading to the next heading of its level or the end).
python3 - "$out" "$table" <<'PY'
import re, sys
out, table = sys.argv[1], open(sys.argv[2]).read()
text = open(out).read()
text = re.sub(r"\n## Deployment packages\n.*?(?=\n## |\Z)", "", text, flags=re.S).rstrip("\n")
if "<!-- kept by scripts/bench.sh -->" in text:
    table = table.replace("<!-- kept by scripts/bench.sh -->\n", "")
open(out, "w").write(text + "\n\n" + table)
PY
rm -f "$table"
sed -n '/^## Deployment packages/,$p' "$out"
[ -z "$over" ] || { echo "$0: over 5 MB:$over" >&2; exit 1; }
