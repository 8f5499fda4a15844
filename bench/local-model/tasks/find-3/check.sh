#!/usr/bin/env bash
# Solved when the final answer gives the path net/limits.py.
grep -q 'net/limits\.py' "$1" || { echo "answer: $(head -c 300 "$1")"; exit 1; }
