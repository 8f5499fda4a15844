#!/usr/bin/env bash
# Solved when client.MAX_RETRIES == 7 and client.TIMEOUT == 45 (hard-coded or read
# from config.json) and config.json is unchanged.
cmp -s config.json "$FIXTURE/files/config.json" || { echo "config.json was changed"; exit 1; }
python3 - <<'PY'
import sys
sys.path.insert(0, ".")
import client
if (client.MAX_RETRIES, client.TIMEOUT) != (7, 45):
    sys.exit(f"MAX_RETRIES={client.MAX_RETRIES!r}, TIMEOUT={client.TIMEOUT!r}")
PY
