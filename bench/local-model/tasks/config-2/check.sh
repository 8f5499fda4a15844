#!/usr/bin/env bash
# Solved when greetings.greet("Ada") == "Bonjour, Ada!" and settings.ini is unchanged.
cmp -s settings.ini "$FIXTURE/files/settings.ini" || { echo "settings.ini was changed"; exit 1; }
python3 - <<'PY'
import sys
sys.path.insert(0, ".")
import greetings
got = greetings.greet("Ada")
if got != "Bonjour, Ada!":
    sys.exit(f"greet('Ada') = {got!r}")
PY
