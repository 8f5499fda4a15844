#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
sed -i 's/return year % 4 == 0/return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)/' dates.py
