#!/usr/bin/env bash
# Solved when no .py file names calc_total, shop.cart defines compute_total, and
# main.py prints what it printed before.
if grep -rn --include='*.py' 'calc_total' .; then echo "calc_total is still used"; exit 1; fi
python3 -c 'from shop.cart import compute_total; assert compute_total([(2.0, 3)]) == 6.0' || exit 1
out=$(python3 main.py 2>&1) || { echo "$out"; exit 1; }
[ "$out" = "$(printf 'Subtotal: 10.0\nTotal: 12.5')" ] || { echo "main.py printed: $out"; exit 1; }
