"""`toolbelt serve` started for a test and stopped after it: shared by the MCP client
tests here and the agent CLI tests of tests/clients."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SERVER_START_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def toolbelt_serve(argv: list[str], env: dict[str, str], log: Path, token: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Runs `argv` (a `toolbelt ... serve --bind 127.0.0.1:PORT ...` command line)
    with its output in `log`; yields the base URL (from `--bind`) and the process once
    GET /healthz answers; stops it with SIGTERM (SIGKILL after 10 s) at the end."""
    bind = argv[argv.index("--bind") + 1]
    base = f"http://{bind}"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    try:
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"toolbelt serve exited ({proc.returncode}): {log.read_text()}")
            try:
                request = urllib.request.Request(f"{base}/healthz", headers={"Authorization": f"Bearer {token}"})
                urllib.request.urlopen(request, timeout=1).close()
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise AssertionError("toolbelt serve did not start listening") from None
                time.sleep(0.05)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def binary_from_env() -> str:
    """The binary under test, from TOOLBELT_BIN (set by the run.sh scripts)."""
    path = os.environ.get("TOOLBELT_BIN", "")
    if not path or not os.access(path, os.X_OK):
        raise pytest.UsageError(f"set TOOLBELT_BIN to an executable toolbelt binary (got {path!r})")
    return os.path.abspath(path)
