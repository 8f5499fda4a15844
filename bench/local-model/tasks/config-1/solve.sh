#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
sed -i -e 's/^MAX_RETRIES = 3/MAX_RETRIES = 7/' -e 's/^TIMEOUT = 10/TIMEOUT = 45/' client.py
