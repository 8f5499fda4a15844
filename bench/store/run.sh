#!/usr/bin/env bash
# One command: the store benchmark on SQLite and on a throwaway PostgreSQL server
# (fsync on, synchronous_commit off: like SQLite's WAL with synchronous=NORMAL, a
# commit survives a crash of the process, not necessarily of the machine).
#   bench/store/run.sh                  # 2,000 tasks, 10,000 reviews
#   TASKS=5000 REVIEWS=20000 bench/store/run.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$repo"
pg_dir=$(mktemp -d /tmp/toolbelt-bench-pg.XXXXXX)
trap '.ci/postgres stop "$pg_dir"' EXIT
url=$(PG_SETTINGS="-c fsync=on -c synchronous_commit=off" .ci/postgres start "$pg_dir")
cargo run --release --locked -q -p toolbelt-tools --example store_bench -- "${TASKS:-2000}" "${REVIEWS:-10000}" "$url"
