#!/usr/bin/env bash
# What the post-edit pipeline costs an edit: `edit_file` through a registry without
# it and one with it, taking turns, medians and their difference
# (crates/toolbelt/benches/diagnostics.rs): the syntax check alone, a missing
# language server, ruff as a linter, a warm basedpyright. ruff and basedpyright are
# taken from the tests' virtual environment (tests/python/setup.sh) when on no PATH.
#   bench/diagnostics/run.sh
#   DIAG_BENCH_RUNS=2000 bench/diagnostics/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="$(tests/python/setup.sh)"
PATH="$venv/bin:$PATH" exec cargo bench --locked -p toolbelt --bench diagnostics
