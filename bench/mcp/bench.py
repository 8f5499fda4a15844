#!/usr/bin/env python3
"""Compares two MCP stdio servers with a plain newline-delimited JSON-RPC client.

No SDK: one subprocess, its pipes, one request at a time, time.perf_counter_ns around
each request's write and its answer's read. Measured per server:
  - start: spawn to the answer of the first tools/list (after initialize), median of runs;
  - p50/p99 latency and calls/s over N calls for each case (read a 4 KiB file, list a
    directory, a glob search), after warm-up calls;
  - peak RSS of the server process (VmHWM from /proc/<pid>/status, read before closing).
The servers run side by side and take turns: starts alternate, and each case's calls run
in rounds that alternate between them, so a noisy stretch of a shared machine falls on
both alike.

  bench.py --fixture DIR --reference 'node .../index.js' --toolbelt /path/to/toolbelt [--calls N]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

PROTOCOL_VERSION = "2025-11-25"
TARGETS = {"latency": 5.0, "memory": 5.0, "start": 10.0}


class RpcError(Exception):
    pass


class Server:
    """One MCP server process spoken to over newline-delimited JSON-RPC."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.argv = argv
        self.started_ns = time.perf_counter_ns()
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "RUST_LOG": "off"},
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        rid = self.next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RpcError(f"{self.argv[0]} closed its stdout (exit {self.proc.poll()}) during {method}")
            answer = json.loads(line)
            if answer.get("id") != rid:
                continue  # a notification or a request from the server
            if "error" in answer:
                raise RpcError(f"{method}: {answer['error']}")
            return answer["result"]

    def handshake(self) -> list[dict[str, Any]]:
        self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "toolbelt-bench", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self.request("tools/list")["tools"]

    def peak_rss_kib(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise RpcError("no VmHWM in /proc status")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Case:
    name: str
    tool: str | None  # None: a `ping`, the round trip with no work (the floor of every call)
    args: dict[str, Any]
    slow: bool = False  # measured with --slow-calls (a search walks the whole tree)


PING = Case("ping (no work)", None, {})


@dataclass
class Result:
    start_ms: float = 0.0
    peak_rss_mib: float = 0.0
    cases: dict[str, dict[str, float]] = field(default_factory=dict)


def make_fixture(root: Path) -> None:
    """A source-like tree: 40 directories of 25 files, one 4 KiB file, one flat directory."""
    if (root / ".complete").exists():
        return
    root.mkdir(parents=True, exist_ok=True)
    line = "fn example() { let value = compute(42); println!(\"{value}\"); }\n"
    for d in range(40):
        sub = root / "src" / f"module_{d:02}"
        sub.mkdir(parents=True, exist_ok=True)
        for f in range(25):
            ext = ("rs", "md", "txt", "toml", "json")[f % 5]
            (sub / f"file_{f:02}.{ext}").write_text(line * (20 + f))
    flat = root / "flat"
    flat.mkdir(exist_ok=True)
    for f in range(60):
        (flat / f"entry_{f:02}.txt").write_text(f"entry {f}\n")
    for d in range(5):
        (flat / f"dir_{d}").mkdir(exist_ok=True)
    text = ("The quick brown fox jumps over the lazy dog. 0123456789\n" * 80)[:4096]
    (root / "small.txt").write_text(text)
    assert (root / "small.txt").stat().st_size == 4096
    (root / ".complete").write_text("")


def reference_cases(tools: set[str], fixture: Path) -> list[Case]:
    read = "read_text_file" if "read_text_file" in tools else "read_file"
    return [
        PING,
        Case("read a 4 KiB file", read, {"path": str(fixture / "small.txt")}),
        Case("list a directory", "list_directory", {"path": str(fixture / "flat")}),
        Case("glob search", "search_files", {"path": str(fixture), "pattern": "**/*.rs"}, slow=True),
    ]


def toolbelt_cases(fixture: Path) -> list[Case]:
    return [
        PING,
        Case("read a 4 KiB file", "read_file", {"path": str(fixture / "small.txt")}),
        Case("list a directory", "list_dir", {"path": str(fixture / "flat"), "depth": 1}),
        Case("glob search", "glob", {"pattern": "**/*.rs", "path": str(fixture), "sort": "path", "limit": 0}, slow=True),
    ]


def call(server: Server, case: Case) -> dict[str, Any]:
    if case.tool is None:
        return server.request("ping", {})
    return server.request("tools/call", {"name": case.tool, "arguments": case.args})


@dataclass
class Contender:
    """A server under test: how to start it and what to call."""

    argv: list[str]
    cases_for: Callable[[set[str]], list[Case]]


def measure(
    contenders: list[Contender], fixture: Path, calls: int, slow_calls: int, warmup: int, starts: int, rounds: int
) -> list[Result]:
    """Measures every contender, interleaved: starts alternate, and each case's calls
    run in `rounds` slices that alternate between the servers (the order flips every
    round), so that a noisy stretch of the machine falls on all of them alike."""
    results = [Result() for _ in contenders]

    def order(i: int) -> list[int]:
        ks = list(range(len(contenders)))
        return ks if i % 2 == 0 else ks[::-1]

    start_samples: list[list[float]] = [[] for _ in contenders]
    for i in range(starts):
        for k in order(i):
            server = Server(contenders[k].argv, fixture)
            server.handshake()
            start_samples[k].append((time.perf_counter_ns() - server.started_ns) / 1e6)
            server.close()
    for k, samples in enumerate(start_samples):
        results[k].start_ms = statistics.median(samples)

    servers = [Server(c.argv, fixture) for c in contenders]
    try:
        case_lists = []
        for server, contender in zip(servers, contenders):
            tools = {t["name"] for t in server.handshake()}
            cases = contender.cases_for(tools)
            for case in cases:
                if case.tool is not None and case.tool not in tools:
                    raise RpcError(f"{server.argv[0]} has no tool {case.tool} (it has {sorted(tools)})")
            case_lists.append(cases)
        for same_case in zip(*case_lists):
            n = slow_calls if same_case[0].slow else calls
            for server, case in zip(servers, same_case):
                first = call(server, case)
                if first.get("isError"):
                    raise RpcError(f"{case.tool} {case.args} failed: {json.dumps(first)[:500]}")
                for _ in range(min(warmup, n)):
                    call(server, case)
            samples: list[list[int]] = [[] for _ in servers]
            elapsed_ns = [0 for _ in servers]
            per_round = max(1, -(-n // rounds))
            for r in range(rounds):
                for k in order(r):
                    todo = min(per_round, n - len(samples[k]))
                    began = time.perf_counter_ns()
                    for _ in range(todo):
                        t0 = time.perf_counter_ns()
                        call(servers[k], same_case[k])
                        samples[k].append(time.perf_counter_ns() - t0)
                    elapsed_ns[k] += time.perf_counter_ns() - began
            for k, xs in enumerate(samples):
                xs.sort()
                results[k].cases[same_case[0].name] = {
                    "p50_ms": xs[len(xs) // 2] / 1e6,
                    "p99_ms": xs[min(len(xs) - 1, (len(xs) * 99) // 100)] / 1e6,
                    "calls_per_s": len(xs) / (elapsed_ns[k] / 1e9),
                }
        for k, server in enumerate(servers):
            results[k].peak_rss_mib = server.peak_rss_kib() / 1024
    finally:
        for server in servers:
            server.close()
    return results


def ratio(reference: float, ours: float | None) -> str:
    if ours is None or ours == 0:
        return "n/a"
    return f"{reference / ours:.1f}x"


def table(ref: Result, ours: Result | None) -> str:
    def o(value: float | None, fmt: str) -> str:
        return "n/a" if value is None else format(value, fmt)

    rows = [
        "| measure | reference | toolbelt | reference / toolbelt | target |",
        "|---|---:|---:|---:|---:|",
        f"| start to first tools/list (ms) | {ref.start_ms:.1f} | {o(ours and ours.start_ms, '.1f')} "
        f"| {ratio(ref.start_ms, ours and ours.start_ms)} | {TARGETS['start']:.0f}x |",
    ]
    for name, r in ref.cases.items():
        c = ours.cases.get(name) if ours else None
        target = "" if name == PING.name else f"{TARGETS['latency']:.0f}x"
        rows.append(
            f"| {name}: p50 (ms) | {r['p50_ms']:.3f} | {o(c and c['p50_ms'], '.3f')} "
            f"| {ratio(r['p50_ms'], c and c['p50_ms'])} | {target} |"
        )
        rows.append(
            f"| {name}: p99 (ms) | {r['p99_ms']:.3f} | {o(c and c['p99_ms'], '.3f')} "
            f"| {ratio(r['p99_ms'], c and c['p99_ms'])} | |"
        )
        rows.append(
            f"| {name}: calls/s | {r['calls_per_s']:.0f} | {o(c and c['calls_per_s'], '.0f')} "
            f"| {ratio(c['calls_per_s'], r['calls_per_s']) if c else 'n/a'} (toolbelt / reference) | |"
        )
    rows.append(
        f"| peak RSS (MiB) | {ref.peak_rss_mib:.1f} | {o(ours and ours.peak_rss_mib, '.1f')} "
        f"| {ratio(ref.peak_rss_mib, ours and ours.peak_rss_mib)} | {TARGETS['memory']:.0f}x |"
    )
    ping = ours.cases.get(PING.name) if ours else None
    if ping:
        ceilings = ", ".join(
            f"{name} {ratio(r['p50_ms'], ping['p50_ms'])}" for name, r in ref.cases.items() if name != PING.name
        )
        rows.append(
            f"\nA server that did no work would answer in its ping time, so through this client no "
            f"server could beat the reference's p50 by more than: {ceilings}."
        )
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixture", type=Path, required=True)
    ap.add_argument("--reference", required=True, help="command line of the reference server, without its directory")
    ap.add_argument("--toolbelt", help="path of the toolbelt binary (omit to measure the reference only)")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--slow-calls", type=int, default=100, help="calls for the glob search")
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10, help="slices each case's calls alternate in")
    a = ap.parse_args()

    fixture = a.fixture.resolve()
    make_fixture(fixture)
    contenders = [
        Contender([*shlex.split(a.reference), str(fixture)], lambda tools: reference_cases(tools, fixture))
    ]
    if a.toolbelt:
        contenders.append(
            Contender([a.toolbelt, "mcp", "--root", str(fixture)], lambda _tools: toolbelt_cases(fixture))
        )
    results = measure(contenders, fixture, a.calls, a.slow_calls, a.warmup, a.starts, a.rounds)
    ref = results[0]
    ours = results[1] if a.toolbelt else None
    print(
        f"{a.calls} calls per case ({a.slow_calls} for the glob search) after up to {a.warmup} warm-up calls; "
        f"start is the median of {a.starts} starts. The servers run side by side and take turns "
        f"({a.rounds} rounds per case).\n"
    )
    print(table(ref, ours))
    return 0


if __name__ == "__main__":
    sys.exit(main())
