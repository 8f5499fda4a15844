#!/usr/bin/env bash
# What hooks cost a call: `read_file` through a registry without hooks and one with
# a hook, taking turns, medians and their difference (crates/toolbelt/benches/hooks.rs).
#   bench/hooks/run.sh               1,000 calls a side (100 for the command hook)
#   HOOK_BENCH_RUNS=5000 bench/hooks/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
exec cargo bench --locked -p toolbelt --bench hooks
