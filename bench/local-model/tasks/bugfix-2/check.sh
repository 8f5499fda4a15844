#!/usr/bin/env bash
# Solved when test_dates.py is unchanged and prints ok.
cmp -s test_dates.py "$FIXTURE/files/test_dates.py" || { echo "test_dates.py was changed"; exit 1; }
out=$(python3 test_dates.py 2>&1) || { echo "$out"; exit 1; }
[ "$out" = ok ] || { echo "printed: $out"; exit 1; }
