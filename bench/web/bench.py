#!/usr/bin/env python3
"""Compares toolbelt's web_fetch with the reference MCP fetch server (mcp-server-fetch)
over MCP stdio, fetching the same page from a server on 127.0.0.1.

The page is an article of the extraction data set kept with the tests. Every call asks
for a new URL (`?n=<i>`), so neither server answers from a cache: each call is a real
fetch, an extraction and a markdown rendering. The servers take turns in rounds, so a
noisy stretch of the machine falls on both alike. Measured per server: p50 and p99 of a
call, calls/s, and peak RSS (VmHWM) after the calls.

  bench.py --reference 'python -m mcp_server_fetch --ignore-robots-txt --allow-private-ips' --toolbelt /path/to/toolbelt [--calls N]
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import shlex
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "mcp"))
from bench import RpcError, Server  # noqa: E402  (the MCP bench's plain JSON-RPC client)

REPO = Path(__file__).resolve().parents[2]
DATASET = REPO / "crates/toolbelt-net/tests/fixtures/extract/dataset/html"


def serve(page: bytes) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            if self.path.startswith("/robots.txt"):
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/article"


def fetch(server: Server, tool: str, url: str) -> dict[str, Any]:
    result = server.request("tools/call", {"name": tool, "arguments": {"url": url, "max_length": 20000}})
    if result.get("isError"):
        raise RpcError(f"{tool} {url} failed: {str(result)[:400]}")
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reference", required=True, help="command line of mcp-server-fetch")
    ap.add_argument("--toolbelt", required=True, help="path to the toolbelt binary")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=10)
    args = ap.parse_args()

    pages = sorted(DATASET.glob("*.html.gz"))
    if not pages:
        print(f"no pages under {DATASET}", file=sys.stderr)
        return 1
    page = gzip.decompress(pages[0].read_bytes())
    http_server, base = serve(page)
    workdir = Path(tempfile.mkdtemp(prefix="toolbelt-web-bench-"))
    contenders = [
        ("mcp-server-fetch", shlex.split(args.reference), "fetch"),
        (
            "toolbelt",
            [args.toolbelt, "mcp", "--root", str(workdir), "--allow-private-network"],
            "web_fetch",
        ),
    ]
    servers = [Server(argv, workdir) for _, argv, _ in contenders]
    samples: list[list[int]] = [[] for _ in contenders]
    elapsed = [0 for _ in contenders]
    n = 0
    try:
        for server in servers:
            server.handshake()
        for k, server in enumerate(servers):
            for _ in range(args.warmup):
                n += 1
                fetch(server, contenders[k][2], f"{base}?n={n}")
        per_round = max(1, -(-args.calls // args.rounds))
        for r in range(args.rounds):
            ks = [0, 1] if r % 2 == 0 else [1, 0]
            for k in ks:
                todo = min(per_round, args.calls - len(samples[k]))
                began = time.perf_counter_ns()
                for _ in range(todo):
                    n += 1
                    t0 = time.perf_counter_ns()
                    fetch(servers[k], contenders[k][2], f"{base}?n={n}")
                    samples[k].append(time.perf_counter_ns() - t0)
                elapsed[k] += time.perf_counter_ns() - began
        peaks = [s.peak_rss_kib() / 1024 for s in servers]
    finally:
        for server in servers:
            server.close()
        http_server.shutdown()

    def stats(xs: list[int]) -> tuple[float, float]:
        xs = sorted(xs)
        return xs[len(xs) // 2] / 1e6, xs[min(len(xs) - 1, len(xs) * 99 // 100)] / 1e6

    (ref_p50, ref_p99), (our_p50, our_p99) = stats(samples[0]), stats(samples[1])
    ref_rate, our_rate = (len(samples[k]) / (elapsed[k] / 1e9) for k in range(2))
    print(f"{args.calls} calls each, {len(page) // 1024} KiB article page on 127.0.0.1, a new URL every call.\n")
    print("| measure | mcp-server-fetch | toolbelt web_fetch | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| p50 latency (ms) | {ref_p50:.2f} | {our_p50:.2f} | {ref_p50 / our_p50:.1f}x |")
    print(f"| p99 latency (ms) | {ref_p99:.2f} | {our_p99:.2f} | {ref_p99 / our_p99:.1f}x |")
    print(f"| calls/s | {ref_rate:.0f} | {our_rate:.0f} | {our_rate / ref_rate:.1f}x |")
    print(f"| peak RSS (MiB) | {peaks[0]:.1f} | {peaks[1]:.1f} | {peaks[0] / peaks[1]:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
