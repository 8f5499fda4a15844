#!/usr/bin/env bash
# One command: the local-model bench (not run in CI; a full run takes hours on 2 cores).
#   bench/local-model/run.sh                                   # the default configurations, every task
#   bench/local-model/run.sh --configs lean,mini --tasks bugfix-1,rename-1
#   bench/local-model/run.sh --configs constrained,grammar --repeat 3 --temperature 0.2 --seed 1
#   bench/local-model/run.sh --report bench/local-model/results/RUN.jsonl
# 1. setup.sh: llama-server, Qwen2.5-Coder-1.5B-Instruct Q4_K_M and mini-swe-agent into
#    $LOCAL_MODEL_HOME (default ~/.cache/toolbelt/local-model), once;
# 2. bench.py: starts llama-server on a free loopback port, runs the tasks with each
#    configuration (default: constrained, lean, native, mini; --repeat N times), writes
#    results/RUN.jsonl as it goes, prints the tables, stops the server. toolbelt is
#    $TOOLBELT_BIN, else $CARGO_TARGET_DIR/release/toolbelt, else target/release/toolbelt
#    (built with cargo when missing). See bench.py's top comment.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
case " $* " in
    *" --report "* | *" --report="* | *" --self-test "* | *" --list "* | *" -h "* | *" --help "*)
        exec python3 "$here/bench.py" "$@" ;;
esac
bash "$here/setup.sh"
exec python3 "$here/bench.py" "$@"
