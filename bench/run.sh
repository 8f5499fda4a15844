#!/usr/bin/env bash
# One command: fetch the Linux kernel source once, install rg and fd when missing,
# build toolbelt (release), then time toolbelt's grep and glob against them.
#   bench/run.sh            # 10 runs per command
#   RUNS=20 bench/run.sh
# Environment: TOOLBELT_BENCH_CACHE (default ~/.cache/toolbelt-bench), RUNS,
# CARGO_TARGET_DIR (default ./target).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
cache="${TOOLBELT_BENCH_CACHE:-$HOME/.cache/toolbelt-bench}"
runs="${RUNS:-10}"
corpus="$cache/linux-source-6.1"
tarball=/usr/src/linux-source-6.1.tar.xz

mkdir -p "$cache"
if [ ! -d "$corpus" ]; then
    if [ ! -f "$tarball" ]; then
        echo "installing linux-source-6.1 (Debian package, about 140 MB)" >&2
        if [ "$(id -u)" -eq 0 ]; then apt-get install -y linux-source-6.1; else sudo apt-get install -y linux-source-6.1; fi
    fi
    echo "unpacking $tarball into $cache" >&2
    tar -C "$cache" -xf "$tarball"
fi

command -v rg >/dev/null || cargo install ripgrep
command -v fd >/dev/null || cargo install fd-find
export PATH="$HOME/.cargo/bin:$PATH"

target="${CARGO_TARGET_DIR:-$repo/target}"
(cd "$repo" && cargo build --release -p toolbelt)
state="$(mktemp -d)"
trap 'rm -rf "$state"' EXIT

echo "rg: $(rg --version | head -1); fd: $(fd --version); corpus: $corpus ($(find "$corpus" -type f | wc -l) files)" >&2
python3 "$here/bench.py" "$target/release/toolbelt" "$corpus" "$state" "$runs"
