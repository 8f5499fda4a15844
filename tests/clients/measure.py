"""The bytes the model received per tool result, per client, as a Markdown table.

    TOOLBELT_CLIENT_MEASURE=/tmp/after.jsonl tests/clients/run.sh /path/to/toolbelt
    python3 tests/clients/measure.py [/tmp/before.jsonl] /tmp/after.jsonl

Each file holds the JSON lines `check_standard` appends (client, transport, call,
bytes, images). With two files, each cell reads `before → after`; a call that never
reached the model shows as `—`.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict

CLIENTS = ["claude-code", "codex", "gemini-cli"]
CALLS = ["read_file", "grep", "read_file (error)", "read_file (image)", "read_file (long)"]


def load(path: str) -> dict[tuple[str, str, str], tuple[int, int]]:
    out: dict[tuple[str, str, str], tuple[int, int]] = {}
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            out[(m["client"], m["transport"], m["call"])] = (m["bytes"], m["images"])
    return out


def cell(value: tuple[int, int] | None) -> str:
    if value is None:
        return "—"
    size, images = value
    return f"{size:,}" + (f" + {images} image" if images else "")


def main(paths: list[str]) -> None:
    runs = [load(p) for p in paths]
    transports: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        for client, transport, _ in run:
            transports[client].add(transport)
    columns = [(c, t) for c in CLIENTS for t in sorted(transports[c])]
    print("| call | " + " | ".join(f"{c} ({t})" for c, t in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for name in CALLS:
        cells = []
        for client, transport in columns:
            values = [cell(run.get((client, transport, name))) for run in runs]
            cells.append(" → ".join(values))
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if not 1 <= len(sys.argv) - 1 <= 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
