#!/usr/bin/env bash
# Solved when test_stats.py is unchanged and passes.
cmp -s test_stats.py "$FIXTURE/files/test_stats.py" || { echo "test_stats.py was changed"; exit 1; }
python3 -m unittest -q test_stats
