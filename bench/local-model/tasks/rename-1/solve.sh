#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
sed -i 's/calc_total/compute_total/g' shop/cart.py shop/checkout.py main.py
