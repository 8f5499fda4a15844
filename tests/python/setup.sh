#!/usr/bin/env bash
# Creates the virtual environment for the MCP client tests and installs the pinned
# packages from requirements.txt into it. Idempotent: when the environment already
# holds exactly these pins, it returns at once.
#   tests/python/setup.sh            # prints the environment's path on stdout
# Environment: TOOLBELT_PY_VENV (default $HOME/.cache/toolbelt/venv), PYTHON (default python3).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
venv="${TOOLBELT_PY_VENV:-$HOME/.cache/toolbelt/venv}"
python="${PYTHON:-python3}"
requirements="$here/requirements.txt"
stamp="$venv/.toolbelt-requirements"

if ! command -v "$python" >/dev/null 2>&1; then
    echo "setup.sh: $python not found; install Python 3.10 or newer" >&2
    exit 1
fi

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$requirements" "$stamp"; then
    echo "$venv"
    exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv" >&2
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements" >&2
cp "$requirements" "$stamp"
echo "$venv"
