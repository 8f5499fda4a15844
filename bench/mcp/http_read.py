#!/usr/bin/env python3
"""`POST /v1/tools/read_file` of `toolbelt serve` over one keep-alive connection:
p50 and p99 of N calls reading a 4 KiB file, after warm-up calls.

    bench/mcp/http_read.py /path/to/toolbelt FIXTURE_DIR [N]

Starts `toolbelt serve --no-token` on a free loopback port with a state directory of
its own, and stops it afterwards.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import tempfile
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    binary, fixture = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    port = free_port()
    with tempfile.TemporaryDirectory() as state:
        server = subprocess.Popen(
            [binary, "serve", "--no-token", "--bind", f"127.0.0.1:{port}", "--root", fixture, "--state-dir", state],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", port)
                    conn.request("GET", "/healthz")
                    conn.getresponse().read()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        sys.exit("http_read.py: the server did not start")
                    time.sleep(0.05)
            body = json.dumps({"path": f"{fixture}/small.txt"}).encode()
            headers = {"Content-Type": "application/json"}
            times = []
            for k in range(n + 100):
                started = time.perf_counter_ns()
                conn.request("POST", "/v1/tools/read_file", body, headers)
                answer = conn.getresponse().read()
                if k >= 100:
                    times.append(time.perf_counter_ns() - started)
            assert json.loads(answer)["status"] == "success", answer[:300]
            times.sort()
            print(f"POST /v1/tools/read_file (4 KiB, keep-alive, {n} calls): "
                  f"p50 {times[n // 2] / 1e6:.3f} ms, p99 {times[n * 99 // 100] / 1e6:.3f} ms")
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
