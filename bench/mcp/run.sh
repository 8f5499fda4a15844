#!/usr/bin/env bash
# One command: install the reference MCP filesystem server (npm, pinned) into a cache
# directory, build toolbelt (release), make the fixture tree, then time both servers
# with the same plain JSON-RPC client (bench.py) and print a markdown table.
#   bench/mcp/run.sh                 # 1000 calls per case
#   CALLS=5000 bench/mcp/run.sh
#   REFERENCE_ONLY=1 bench/mcp/run.sh   # measure the reference server alone
# Then gateway.py: the reference's tools through `toolbelt mcp` against direct calls.
# Environment: TOOLBELT_BENCH_CACHE (default ~/.cache/toolbelt-bench), CALLS, SLOW_CALLS, WARMUP,
# STARTS, ROUNDS, CARGO_TARGET_DIR (default ./target), ALLOW_STALE_ORDER=1 (measure even when
# crates/toolbelt/symbol-order.txt no longer matches the build).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${TOOLBELT_BENCH_CACHE:-$HOME/.cache/toolbelt-bench}/mcp"
reference_pkg="@modelcontextprotocol/server-filesystem@2026.8.31"

for cmd in node npm python3; do
    command -v "$cmd" >/dev/null || { echo "run.sh: $cmd is required" >&2; exit 1; }
done

mkdir -p "$cache/npm"
stamp="$cache/npm/.installed"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$reference_pkg" ]; then
    echo "installing $reference_pkg into $cache/npm" >&2
    npm install --prefix "$cache/npm" --no-audit --no-fund --silent "$reference_pkg" >&2
    echo "$reference_pkg" >"$stamp"
fi
reference_js="$(readlink -f "$cache/npm/node_modules/.bin/mcp-server-filesystem")"

toolbelt_args=()
if [ -z "${REFERENCE_ONLY:-}" ]; then
    (cd "$repo" && cargo build --release --locked -p toolbelt >&2)
    target="${CARGO_TARGET_DIR:-$repo/target}"
    toolbelt_args=(--toolbelt "$target/release/toolbelt")
    # A stale function order costs megabytes of peak memory: say so before measuring.
    python3 "$here/symbol_order.py" --check "$target/release/toolbelt" >&2 \
        || [ -n "${ALLOW_STALE_ORDER:-}" ] \
        || { echo "run.sh: (ALLOW_STALE_ORDER=1 measures anyway)" >&2; exit 1; }
fi

# Node runs the reference directly (no npx or shell in between), so the measured
# process is the server itself.
python3 "$here/bench.py" \
    --fixture "$cache/fixture" \
    --reference "node $reference_js" \
    --calls "${CALLS:-1000}" --slow-calls "${SLOW_CALLS:-100}" --warmup "${WARMUP:-100}" --starts "${STARTS:-5}" --rounds "${ROUNDS:-10}" \
    "${toolbelt_args[@]}"

# What the gateway costs: the reference server's tools called through `toolbelt mcp`
# ([mcp_servers]) against the same calls sent to it directly.
if [ -z "${REFERENCE_ONLY:-}" ]; then
    echo
    python3 "$here/gateway.py" \
        --fixture "$cache/fixture" \
        --reference "node $reference_js" \
        --toolbelt "$target/release/toolbelt" \
        --calls "${CALLS:-1000}" --warmup "${WARMUP:-100}" --rounds "${ROUNDS:-10}"
fi
