#!/usr/bin/env bash
# Solved when test_listutils.py is unchanged and passes.
cmp -s test_listutils.py "$FIXTURE/files/test_listutils.py" || { echo "test_listutils.py was changed"; exit 1; }
python3 -m unittest -q test_listutils
