#!/usr/bin/env bash
# Solved when `python3 hello.py` prints exactly "Hello, toolbelt!".
[ -f hello.py ] || { echo "no hello.py"; exit 1; }
out=$(python3 hello.py 2>&1) || { echo "$out"; exit 1; }
[ "$out" = "Hello, toolbelt!" ] || { echo "printed: $out"; exit 1; }
