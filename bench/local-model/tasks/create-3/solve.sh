#!/usr/bin/env bash
# A reference solution (for bench.py --self-test; never shown to the agents).
cat > primes.py <<'PY'
def is_prime(n):
    if n < 2:
        return False
    return all(n % d for d in range(2, int(n ** 0.5) + 1))
PY
