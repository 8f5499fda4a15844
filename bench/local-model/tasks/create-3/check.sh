#!/usr/bin/env bash
# Solved when primes.is_prime is right for -3..100.
python3 - <<'PY'
import sys
sys.path.insert(0, ".")
try:
    from primes import is_prime
except Exception as e:
    sys.exit(f"import primes: {e}")
expected = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97}
wrong = [n for n in range(-3, 101) if bool(is_prime(n)) != (n in expected)]
if wrong:
    sys.exit(f"is_prime is wrong for {wrong[:10]}")
PY
