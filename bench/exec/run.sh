#!/usr/bin/env bash
# One command: build the exec bench (release) and compare toolbelt_exec::run with
# plain `sh -c`: spawning `true` and `echo`, the cost of each sandbox mode, and a
# flood of output (`head -c 2G /dev/zero | base64`: 2.9 GB) checked for budget, a
# complete spill and flat memory.
#   bench/exec/run.sh                 # 200 runs, 2 GiB flood
#   RUNS=500 FLOOD_BYTES=1000000000 bench/exec/run.sh
# Targets: under 1.5x `sh -c` plus a fixed cost under 2 ms per command.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
# The sandbox rows need the helper beside the example (target/release).
cargo build --release --locked -q -p toolbelt-sandbox --bin toolbelt-sandbox
cargo run --release --locked -q -p toolbelt-exec --example exec_bench -- "${RUNS:-200}" "${FLOOD_BYTES:-2147483648}"
