#!/usr/bin/env bash
# One command: install the peer agent (Claude Code, npm, pinned) into a cache
# directory, build toolbelt and the scripted model provider (release), then run the
# same scripted coding task through both agents, round after round, against the
# provider on 127.0.0.1, and print a markdown table.
#   bench/agent/run.sh                  # 10 rounds
#   ROUNDS=20 bench/agent/run.sh
#   CLAUDE_BARE=1 bench/agent/run.sh    # Claude Code with --bare
#   KEEP=1 bench/agent/run.sh           # keep every run's directory (script, requests, output)
# Environment: TOOLBELT_BENCH_AGENT_CACHE (default ~/.cache/toolbelt/bench-agent), ROUNDS,
# WARMUP, CARGO_TARGET_DIR (default ./target), NO_NETNS=1 (do not isolate the network).
#
# The runs happen in a network namespace of their own with only the loopback
# interface up (`unshare -n`, as root), so nothing the agents try can leave the
# machine; the provider is started inside it too. Without root the bench runs in the
# host's network; Claude Code is still pointed at the loopback provider
# (ANTHROPIC_BASE_URL) with its nonessential traffic turned off.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${TOOLBELT_BENCH_AGENT_CACHE:-$HOME/.cache/toolbelt/bench-agent}"
peer_pkg="@anthropic-ai/claude-code@2.1.331"

for cmd in node npm python3 cargo; do
    command -v "$cmd" >/dev/null || { echo "run.sh: $cmd is required" >&2; exit 1; }
done

# The peer: Claude Code from npm. Its package's postinstall links the native
# binary of the platform package (an optional dependency) over bin/claude.exe;
# nothing is downloaded from elsewhere.
peer_dir="$cache/claude-code"
mkdir -p "$peer_dir"
stamp="$peer_dir/.installed"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$peer_pkg" ]; then
    echo "installing $peer_pkg into $peer_dir" >&2
    npm install --prefix "$peer_dir" --no-audit --no-fund --silent "$peer_pkg" >&2
    echo "$peer_pkg" >"$stamp"
fi
claude="$peer_dir/node_modules/.bin/claude"
"$claude" --version >/dev/null 2>&1 || { echo "run.sh: $claude does not run" >&2; exit 1; }

target="${CARGO_TARGET_DIR:-$repo/target}"
(cd "$repo" && cargo build --release -p toolbelt >&2)
(cd "$repo" && cargo build --release -p toolbelt-agent --features testing --example scripted_provider >&2)

bench_args=(
    --provider "$target/release/examples/scripted_provider"
    --toolbelt "$target/release/toolbelt"
    --claude "$claude"
    --rounds "${ROUNDS:-10}" --warmup "${WARMUP:-1}"
)
[ -n "${CLAUDE_BARE:-}" ] && bench_args+=(--claude-bare)
[ -n "${KEEP:-}" ] && bench_args+=(--keep)

if [ -z "${NO_NETNS:-}" ] && [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
    exec unshare -n sh -c 'ip link set lo up && exec "$@"' sh python3 "$here/bench.py" "${bench_args[@]}"
fi
echo "run.sh: not isolating the network (needs root and unshare -n; NO_NETNS set?)" >&2
exec python3 "$here/bench.py" "${bench_args[@]}"
