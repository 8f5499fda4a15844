#!/usr/bin/env bash
# read_output of a 10 MB saved output from its spill file and from the store
# (PostgreSQL), pages per second, and what keeping it in the store adds to the call
# that saved it (crates/toolbelt/benches/saved_outputs.rs). Without
# TOOLBELT_TEST_DATABASE_URL, a throwaway PostgreSQL server is started (fsync on,
# synchronous_commit off, as bench/store does).
#   bench/saved-outputs/run.sh
#   SAVED_BENCH_PAGES=500 bench/saved-outputs/run.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
if [ -z "${TOOLBELT_TEST_DATABASE_URL:-}" ]; then
  pg_dir=$(mktemp -d /tmp/toolbelt-bench-pg.XXXXXX)
  trap '.ci/postgres stop "$pg_dir"' EXIT
  TOOLBELT_TEST_DATABASE_URL=$(PG_SETTINGS="-c fsync=on -c synchronous_commit=off" .ci/postgres start "$pg_dir")
  export TOOLBELT_TEST_DATABASE_URL
fi
cargo bench --locked -p toolbelt --bench saved_outputs
