#!/usr/bin/env bash
# Solved when `python3 main.py` prints "Items: 3" then "Total: 42.5" and
# inventory.total_value works on other items too.
out=$(python3 main.py 2>&1) || { echo "$out"; exit 1; }
[ "$out" = "$(printf 'Items: 3\nTotal: 42.5')" ] || { echo "main.py printed: $out"; exit 1; }
python3 - <<'PY'
import sys
sys.path.insert(0, ".")
from inventory import total_value
got = total_value([{"name": "x", "price": 2, "qty": 3}, {"name": "y", "price": 0.5, "qty": 4}])
if got != 8:
    sys.exit(f"total_value(...) = {got!r}, expected 8")
PY
