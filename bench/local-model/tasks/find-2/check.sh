#!/usr/bin/env bash
# Solved when the final answer names apply_discount.
grep -q 'apply_discount' "$1" || { echo "answer: $(head -c 300 "$1")"; exit 1; }
