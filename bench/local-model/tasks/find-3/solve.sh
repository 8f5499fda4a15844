#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
echo "net/limits.py" > "$1"
