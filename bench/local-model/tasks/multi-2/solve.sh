#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
cat >> inventory.py <<'PY'


def total_value(items):
    return sum(item_value(item) for item in items)
PY
cat >> main.py <<'PY'

from inventory import total_value

print("Total:", total_value(ITEMS))
PY
