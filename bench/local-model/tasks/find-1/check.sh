#!/usr/bin/env bash
# Solved when the final answer names the port, 8137.
grep -Eq '(^|[^0-9])8137([^0-9]|$)' "$1" || { echo "answer: $(head -c 300 "$1")"; exit 1; }
