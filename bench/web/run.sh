#!/usr/bin/env bash
# One command: install the reference MCP fetch server (PyPI, pinned) into a venv in the
# cache, build toolbelt (release), then time both fetching the same page from a server
# on 127.0.0.1 over MCP stdio (bench.py) and print a markdown table.
#   bench/web/run.sh                 # 200 calls each
#   CALLS=500 bench/web/run.sh
# Environment: TOOLBELT_BENCH_CACHE (default ~/.cache/toolbelt-bench), CALLS,
# CARGO_TARGET_DIR (default ./target).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${TOOLBELT_BENCH_CACHE:-$HOME/.cache/toolbelt-bench}/web"
reference_pkg="mcp-server-fetch==2026.10.24"

venv="$cache/venv"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.installed" 2>/dev/null)" != "$reference_pkg" ]; then
    echo "installing $reference_pkg into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "$reference_pkg"
    echo "$reference_pkg" >"$venv/.installed"
fi

(cd "$repo" && cargo build --release --locked -p toolbelt >&2)
target="${CARGO_TARGET_DIR:-$repo/target}"
exec python3 "$here/bench.py" \
    --reference "$venv/bin/python -m mcp_server_fetch --ignore-robots-txt --allow-private-ips" \
    --toolbelt "$target/release/toolbelt" \
    --calls "${CALLS:-200}"
