#!/usr/bin/env bash
# One command: the scheduler benchmark (1,000 jobs due in the same second) on SQLite
# and on a throwaway PostgreSQL server.
#   bench/sched/run.sh            # 1,000 jobs
#   JOBS=5000 bench/sched/run.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
pg_dir=$(mktemp -d /tmp/toolbelt-bench-pg.XXXXXX)
trap '.ci/postgres stop "$pg_dir"' EXIT
url=$(PG_SETTINGS="-c fsync=on -c synchronous_commit=off" .ci/postgres start "$pg_dir")
cargo run --release --locked -q -p toolbelt-sched --example fire_bench -- "${JOBS:-1000}" "$url"
