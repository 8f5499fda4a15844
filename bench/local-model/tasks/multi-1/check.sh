#!/usr/bin/env bash
# Solved when test_report.py is unchanged and passes and report.py uses word_count.
cmp -s test_report.py "$FIXTURE/files/test_report.py" || { echo "test_report.py was changed"; exit 1; }
grep -q 'word_count' report.py || { echo "report.py does not use word_count"; exit 1; }
python3 -m unittest -q test_report
