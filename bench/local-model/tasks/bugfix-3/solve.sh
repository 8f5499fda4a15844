#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
sed -i 's/len(items) - size, size/len(items), size/' listutils.py
