#!/usr/bin/env bash
# One command: build the extraction bench (release), run toolbelt's extractor and
# trafilatura over the article-extraction data set, score both with the data
# set's shingle metric and print a markdown table.
#   bench/extract/run.sh
#   RUNS=3 bench/extract/run.sh
# Environment: EXTRACTION_DATA (default ../shared/data/extraction from the repo
# root), TOOLBELT_BENCH_CACHE (default ~/.cache/toolbelt-bench; the Python venv
# with trafilatura lives there), RUNS (timed passes, best kept; default 10),
# CARGO_TARGET_DIR (default ./target).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
data="${EXTRACTION_DATA:-$repo/../shared/data/extraction}"
cache="${TOOLBELT_BENCH_CACHE:-$HOME/.cache/toolbelt-bench}"
venv="$cache/extract-venv"
runs="${RUNS:-10}"
target="${CARGO_TARGET_DIR:-$repo/target}"

[ -f "$data/ground-truth.json" ] || { echo "no data set at $data (set EXTRACTION_DATA)" >&2; exit 1; }
data="$(cd "$data" && pwd)"

(cd "$repo" && cargo build --release -p toolbelt-net --example extract_bench)

mkdir -p "$cache"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import trafilatura" 2>/dev/null; then
    echo "creating $venv with trafilatura" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet trafilatura lxml_html_clean
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

echo "toolbelt: $runs timed passes over $(ls "$data/html" | wc -l) pages" >&2
"$target/release/examples/extract_bench" --data "$data" --runs "$runs" --out "$out/toolbelt.json" >&2
echo "trafilatura $("$venv/bin/python" -c 'import trafilatura; print(trafilatura.__version__)'): $runs timed passes" >&2
"$venv/bin/python" "$here/run_trafilatura.py" "$data" "$out/trafilatura.json" "$runs"

python3 "$here/score.py" "$data" \
    "toolbelt=$out/toolbelt.json:$out/toolbelt.timing.json" \
    "trafilatura=$out/trafilatura.json:$out/trafilatura.timing.json" \
    --baseline trafilatura
