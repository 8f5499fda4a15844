#!/usr/bin/env bash
# Runs the MCP client tests: the agent CLIs people use, installed pinned from npm,
# drive a built toolbelt (stdio and HTTP) with a scripted model behind them.
#   tests/clients/run.sh /path/to/toolbelt [pytest arguments...]   (e.g. -k codex)
# Installs, once, into $TOOLBELT_CLIENTS (default ~/.cache/toolbelt/clients) the
# packages of package-lock.json: Claude Code, Codex CLI, gemini-cli, the MCP Inspector,
# and Node 22 (the Inspector needs it); the Python side is tests/python's environment.
# Environment: TOOLBELT_BIN instead of the first argument; TOOLBELT_PY_VENV (see
# tests/python/setup.sh); TOOLBELT_CLIENT_MEASURE: a file that collects the bytes the
# model received per tool result (tests/clients/measure.py turns it into a table).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-${TOOLBELT_BIN:-}}"
[ $# -gt 0 ] && shift
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
    echo "usage: $0 /path/to/toolbelt [pytest arguments...] (got '${bin}')" >&2
    exit 2
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

command -v npm >/dev/null || { echo "run.sh: npm is required" >&2; exit 1; }
prefix="${TOOLBELT_CLIENTS:-$HOME/.cache/toolbelt/clients}"
mkdir -p "$prefix"
if ! cmp -s "$here/package-lock.json" "$prefix/.installed-lock" || [ ! -d "$prefix/node_modules" ]; then
    echo "installing the MCP clients into $prefix" >&2
    cp "$here/package.json" "$here/package-lock.json" "$prefix/"
    (cd "$prefix" && npm ci --no-audit --no-fund --silent >&2)
    cp "$here/package-lock.json" "$prefix/.installed-lock"
fi

venv="$("$here/../python/setup.sh")"
cd "$here"
TOOLBELT_BIN="$bin" TOOLBELT_CLIENTS="$prefix" exec "$venv/bin/python" -m pytest -p no:cacheprovider -q "$@" .
