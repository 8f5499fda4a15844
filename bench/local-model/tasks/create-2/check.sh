#!/usr/bin/env bash
# Solved when colors.json holds the JSON array ["red", "green", "blue"].
python3 - <<'PY'
import json, sys
try:
    data = json.load(open("colors.json"))
except Exception as e:
    sys.exit(f"colors.json: {e}")
if data != ["red", "green", "blue"]:
    sys.exit(f"colors.json holds {data!r}")
PY
