#!/usr/bin/env python3
"""Syscalls per call of `toolbelt mcp`, by kind: the server under `strace -f -c`, driven
over stdio by a plain JSON-RPC client, once with 1 call and once with N+1 calls of one
case; the difference divided by N is what one call costs.

    bench/mcp/profile_syscalls.py /path/to/toolbelt [N]     # N defaults to 500

Needs strace. Makes its fixture (a 4 KiB file, a directory of 65 entries) in a
temporary directory. Prints one line per case: ping, read a 4 KiB file, list 65 entries.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def drive(binary: str, fixture: Path, state: Path, out: Path, case: str, calls: int) -> None:
    cmd = ["strace", "-f", "-c", "-o", str(out), binary, "--state-dir", str(state), "mcp", "--root", str(fixture)]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert p.stdin and p.stdout

    def rpc(i: int, method: str, params: dict | None = None) -> dict:
        msg: dict = {"jsonrpc": "2.0", "id": i, "method": method}
        if params is not None:
            msg["params"] = params
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        return json.loads(p.stdout.readline())

    rpc(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "profile", "version": "1"}})
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    p.stdin.flush()
    for i in range(1, calls + 1):
        if case == "read":
            rpc(i, "tools/call", {"name": "read_file", "arguments": {"path": str(fixture / "small.txt")}})
        elif case == "list":
            rpc(i, "tools/call", {"name": "list_dir", "arguments": {"path": str(fixture / "flat")}})
        else:
            rpc(i, "ping")
    p.stdin.close()
    p.wait()


def counts(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
            out[parts[-1]] = int(parts[3])
    return out


def main() -> None:
    binary = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        fixture = t / "fixture"
        (fixture / "flat").mkdir(parents=True)
        (fixture / "small.txt").write_text(("x" * 63 + "\n") * 64)
        for i in range(60):
            (fixture / "flat" / f"f{i}.txt").write_text(f"file {i}\n")
        for i in range(5):
            (fixture / "flat" / f"d{i}").mkdir()
        for case in ("ping", "read", "list"):
            base, full = t / f"{case}-1.txt", t / f"{case}-n.txt"
            drive(binary, fixture, t / "state", base, case, 1)
            drive(binary, fixture, t / "state", full, case, n + 1)
            a, b = counts(base), counts(full)
            per = sorted(((b.get(k, 0) - a.get(k, 0)) / n, k) for k in b)
            per = [(v, k) for v, k in per if v >= 0.05]
            total = sum(v for v, _ in per)
            print(f"{case}: {total:.1f} syscalls per call: " + ", ".join(f"{k} {v:.1f}" for v, k in sorted(per, reverse=True)))


if __name__ == "__main__":
    main()
