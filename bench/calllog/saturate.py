#!/usr/bin/env python3
"""The call log under saturation: what it costs a busy `toolbelt serve`, and whether
every call a client was answered ends up in the log.

    bench/calllog/saturate.py [--database-url URL] [--seconds 8] [--clients 8]
                              [--burners 0] [--rounds 3] NAME=BINARY [NAME=BINARY ...]

For each binary, taking turns round by round (so that load from other processes hits
all alike, and in turn first): starts `toolbelt serve --no-token` with a state directory of its own (the
store: SQLite in it, or the PostgreSQL database given, emptied of calls first), runs
CLIENTS threads, each on its own keep-alive connection, sending `read_file` of a 4 KiB
file through `/v1` for SECONDS, with BURNERS busy-looping processes beside them (to
starve the call log's writer, which runs at a lower priority), then stops the server
with SIGTERM (a graceful stop: the call log is flushed) and counts the calls answered
that are missing from the log. Printed per binary: calls per second, the median over
the rounds of p50 and p99 per call, the longest graceful stop (SIGTERM to exit: the
writer catching up), and the missing calls of every round.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import sqlite3
import statistics
import subprocess
import tempfile
import threading
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def logged_ids(state: str, database: str | None) -> set[str]:
    if database is None:
        with sqlite3.connect(os.path.join(state, "toolbelt.db")) as db:
            return {r[0] for r in db.execute("SELECT call_id FROM calls")}
    out = subprocess.run(["psql", "-qtA", database, "-c", "SELECT call_id FROM calls"],
                         check=True, capture_output=True, text=True).stdout
    return set(out.split())


def one_round(binary: str, root: str, args: argparse.Namespace) -> tuple[float, float, float, int, int, float]:
    if args.database_url:
        subprocess.run(["psql", "-qtA", args.database_url, "-c", "DELETE FROM calls"],
                       check=False, capture_output=True)
    with tempfile.TemporaryDirectory() as state:
        port = free_port()
        argv = [binary, "serve", "--no-token", "--bind", f"127.0.0.1:{port}", "--root", root]
        if args.database_url:
            argv += ["--database-url", args.database_url]
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=dict(os.environ, TOOLBELT_STATE_DIR=state))
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    server.kill()
                    raise SystemExit("saturate.py: the server did not start")
                time.sleep(0.05)
        burners = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(args.burners)]
        stop = time.monotonic() + args.seconds
        ids: list[str] = []
        times: list[int] = []
        lock = threading.Lock()

        def client() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            body = json.dumps({"path": "small.txt"}).encode()
            headers = {"Content-Type": "application/json"}
            mine: list[str] = []
            spent: list[int] = []
            while time.monotonic() < stop:
                started = time.perf_counter_ns()
                conn.request("POST", "/v1/tools/read_file", body, headers)
                env = json.loads(conn.getresponse().read())
                spent.append(time.perf_counter_ns() - started)
                assert env["status"] == "success", env
                mine.append(env["context"]["call_id"])
            with lock:
                ids.extend(mine)
                times.extend(spent)

        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - started
        for b in burners:
            b.kill()
            b.wait()
        stopping = time.perf_counter()
        server.terminate()
        server.wait(timeout=300)
        stopped = time.perf_counter() - stopping
        logged = logged_ids(state, args.database_url)
    times.sort()
    missing = sum(1 for i in ids if i not in logged)
    return (len(ids) / wall, times[len(times) // 2] / 1e6, times[len(times) * 99 // 100] / 1e6,
            missing, len(ids), stopped)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--database-url")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--burners", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("binaries", nargs="+", help="NAME=BINARY")
    args = ap.parse_args()
    binaries = dict(b.split("=", 1) for b in args.binaries)
    results: dict[str, list[tuple[float, float, float, int, int, float]]] = {n: [] for n in binaries}
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "small.txt"), "w") as f:
            f.write(("x" * 63 + "\n") * 64)
        for k in range(args.rounds):
            # Each round in the other order: a stretch of load falls on both sides.
            order = list(binaries.items())
            for name, binary in order if k % 2 == 0 else reversed(order):
                results[name].append(one_round(binary, root, args))
    store = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{store}, {args.clients} clients x {args.seconds:g} s, {args.burners} burners, "
          f"{args.rounds} rounds (medians; missing per round):")
    for name, rs in results.items():
        rate = statistics.median(r[0] for r in rs)
        p50 = statistics.median(r[1] for r in rs)
        p99 = statistics.median(r[2] for r in rs)
        stop = max(r[5] for r in rs)
        missing = ", ".join(f"{r[3]}/{r[4]}" for r in rs)
        print(f"  {name:10} {rate:7.0f} calls/s   p50 {p50:5.2f} ms   p99 {p99:5.2f} ms   "
              f"stop <= {stop:4.1f} s   missing {missing}")


if __name__ == "__main__":
    main()
