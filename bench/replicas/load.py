#!/usr/bin/env python3
"""What the call log and saved outputs cost a server on PostgreSQL, under load.

    bench/replicas/load.py /path/to/toolbelt POSTGRES_URL [CALLS_PER_CLIENT] [ROUNDS]

Runs `toolbelt serve --no-token` on a free loopback port, with a state directory of
its own, in three configurations, taking turns round by round so that load from
other processes hits all alike:

- `pg`: the store on PostgreSQL, the call log on: every call's record journalled,
  then written to the store; every output over the budget saved in the store too.
- `pg-no-log`: the same server with the call log off (`--call-log off`).
- `sqlite`: the default embedded store, the call log on; saved outputs in files.

8 clients, each on its own keep-alive connection, send CALLS_PER_CLIENT calls each:
9 of 10 read a 4 KiB file, 1 of 10 runs `seq` whose 60 KB output is cut and saved.
Printed per configuration: calls per second and the median of the rounds' p50 and
p99 per call; then the overhead of `pg` over `pg-no-log` (the call log on
PostgreSQL) as differences.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

CLIENTS = 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary: str, root: str, state: str, database: str | None, log: bool):
    port = free_port()
    args = [binary, "serve", "--no-token", "--bind", f"127.0.0.1:{port}", "--root", root]
    if database:
        args += ["--database-url", database]
    if not log:
        args += ["--call-log", "off"]
    env = dict(os.environ, TOOLBELT_STATE_DIR=state)
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 30
    while True:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port)
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            return server, port
        except OSError:
            if time.monotonic() > deadline:
                server.kill()
                sys.exit("load.py: the server did not start")
            time.sleep(0.05)


def client(port: int, n: int, root: str, times: list[int], errors: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    read = json.dumps({"path": f"{root}/small.txt"}).encode()
    spill = json.dumps({"command": "seq 1 12000"}).encode()
    for k in range(n):
        path, body = ("/v1/tools/bash", spill) if k % 10 == 9 else ("/v1/tools/read_file", read)
        started = time.perf_counter_ns()
        conn.request("POST", path, body, headers)
        answer = conn.getresponse().read()
        times.append(time.perf_counter_ns() - started)
        if json.loads(answer).get("status") not in ("success", "partial"):
            errors.append(answer[:200].decode(errors="replace"))


def round_of(binary: str, root: str, database: str | None, log: bool, n: int):
    with tempfile.TemporaryDirectory() as state:
        server, port = start(binary, root, state, database, log)
        try:
            warm: list[int] = []
            client(port, 50, root, warm, [])
            times: list[int] = []
            errors: list[str] = []
            threads = [
                threading.Thread(target=client, args=(port, n, root, times, errors))
                for _ in range(CLIENTS)
            ]
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - started
        finally:
            server.terminate()
            server.wait(timeout=30)
    if errors:
        sys.exit(f"load.py: {len(errors)} calls failed, first: {errors[0]}")
    times.sort()
    p = lambda q: times[min(len(times) - 1, int(q * len(times)))] / 1e6  # noqa: E731
    return len(times) / wall, p(0.50), p(0.99)


def main() -> None:
    binary, database = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 500
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    configs = {
        "pg": (database, True),
        "pg-no-log": (database, False),
        "sqlite": (None, True),
    }
    results: dict[str, list[tuple[float, float, float]]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "small.txt"), "w") as f:
            f.write(("x" * 63 + "\n") * 64)
        for _ in range(rounds):
            for name, (db, log) in configs.items():
                results[name].append(round_of(binary, root, db, log, n))
    print(f"{CLIENTS} clients x {n} calls (9 in 10 read 4 KiB, 1 in 10 saves a 60 KB output), "
          f"{rounds} rounds, medians:")
    medians = {}
    for name, rs in results.items():
        rate = statistics.median(r[0] for r in rs)
        p50 = statistics.median(r[1] for r in rs)
        p99 = statistics.median(r[2] for r in rs)
        medians[name] = (rate, p50, p99)
        print(f"  {name:10} {rate:8.0f} calls/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")
    (r1, a50, a99), (r0, b50, b99) = medians["pg"], medians["pg-no-log"]
    print(f"  call log on PostgreSQL: p50 {a50 - b50:+.2f} ms, p99 {a99 - b99:+.2f} ms, "
          f"throughput {100 * (r1 / r0 - 1):+.0f}%")


if __name__ == "__main__":
    main()
