#!/usr/bin/env python3
"""What the gateway costs: a call to another MCP server's tool through `toolbelt mcp`
(with the server configured under [mcp_servers]) against the same call sent to that
server directly, with the plain JSON-RPC client of bench.py.

The server is the reference filesystem server (node). The two paths take turns: the
calls run in rounds that alternate between them, the order flipping every round, so a
noisy stretch of the machine falls on both alike. Printed: p50 and p99 of each path
and the gateway's p50 overhead in µs, per case.

  gateway.py --fixture DIR --reference 'node .../index.js' --toolbelt /path/to/toolbelt
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import tempfile
import time
from pathlib import Path

from bench import Server, make_fixture


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixture", type=Path, required=True)
    ap.add_argument("--reference", required=True, help="the command line of the upstream server")
    ap.add_argument("--toolbelt", required=True)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()

    make_fixture(args.fixture)
    reference = shlex.split(args.reference)
    with tempfile.TemporaryDirectory(prefix="toolbelt-gateway-bench-") as tmp:
        config = Path(tmp) / "toolbelt.toml"
        config.write_text(
            "[mcp_servers.fs]\n"
            f"command = {json.dumps(reference[0])}\n"
            f"args = {json.dumps(reference[1:] + [str(args.fixture)])}\n"
        )
        direct = Server(reference + [str(args.fixture)], args.fixture)
        gateway = Server(
            [args.toolbelt, "--config", str(config), "--root", str(args.fixture), "--state-dir", tmp, "--tools", "files", "mcp"],
            args.fixture,
        )
        direct_tools = {t["name"] for t in direct.handshake()}
        gateway_tools = {t["name"] for t in gateway.handshake()}
        read = "read_text_file" if "read_text_file" in direct_tools else "read_file"
        cases = [
            ("read a 4 KiB file", read, {"path": str(args.fixture / "small.txt")}),
            ("list a directory", "list_directory", {"path": str(args.fixture / "flat")}),
        ]
        for _, tool, _ in cases:
            assert f"fs__{tool}" in gateway_tools, f"the gateway does not offer fs__{tool}"

        rows = []
        for name, tool, arguments in cases:
            paths = [(direct, tool), (gateway, f"fs__{tool}")]
            samples: list[list[float]] = [[], []]
            for k, (server, t) in enumerate(paths):
                for _ in range(args.warmup):
                    answer = server.request("tools/call", {"name": t, "arguments": arguments})
                    assert not answer.get("isError"), answer
            per_round = max(1, args.calls // args.rounds)
            for r in range(args.rounds):
                order = [0, 1] if r % 2 == 0 else [1, 0]
                for k in order:
                    server, t = paths[k]
                    for _ in range(per_round):
                        started = time.perf_counter_ns()
                        server.request("tools/call", {"name": t, "arguments": arguments})
                        samples[k].append((time.perf_counter_ns() - started) / 1e3)
            d50, g50 = statistics.median(samples[0]), statistics.median(samples[1])
            rows.append((name, d50, percentile(samples[0], 0.99), g50, percentile(samples[1], 0.99), g50 - d50))
        direct.close()
        gateway.close()

    print(f"| case ({args.calls} calls) | direct p50 | direct p99 | through toolbelt p50 | through toolbelt p99 | p50 overhead |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, d50, d99, g50, g99, over in rows:
        print(f"| {name} | {d50:,.0f} µs | {d99:,.0f} µs | {g50:,.0f} µs | {g99:,.0f} µs | {over:,.0f} µs |")


if __name__ == "__main__":
    main()
