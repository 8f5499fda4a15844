#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
echo 'print("Hello, toolbelt!")' > hello.py
