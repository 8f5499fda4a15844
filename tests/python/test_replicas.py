"""Three replicas of `toolbelt serve` on one PostgreSQL database and one workspace,
behind HAProxy with the configuration the README shows (deploy/haproxy/haproxy.cfg,
this very file, its addresses from the environment), driven from the outside:

- a `bash` output over the budget, spilled, then read page by page through the
  balancer, whichever replica answers each page;
- 1,000 mixed calls from 8 clients through the balancer, no error;
- the official MCP Python SDK: the 2026-07-28 revision round robin (a session of 50
  calls), older revisions through the frontend that keeps a session on its replica,
  and without it a 404 (the client opens a new session), never a 5xx;
- a prompt job fired by one replica: its run (with its transcript) listed by each
  replica, its `ask_user` question answered through another, the run finished;
- kill -9 of one replica under calls: HAProxy's health check takes it out, every
  call a client got an answer to is in the call log, an output spilled on it is
  still readable, and a job every second goes on firing once per tick on the others;
- SIGTERM: the call under way finishes, new connections are refused, the process
  exits within the grace period, and the balancer sends the calls elsewhere.

Needs a PostgreSQL server (TOOLBELT_TEST_DATABASE_URL; `.ci/postgres start DIR`
prints one), `haproxy` and `psql`. Without them the test is skipped, saying why;
with TOOLBELT_REQUIRE_REPLICAS=1 (as .ci/run sets) it fails instead. The binary
under test comes from TOOLBELT_BIN; the scripted model is the `scripted_provider`
example beside it. Run through tests/python/run.sh (`-k replicas` picks these).
"""

from __future__ import annotations

import csv
import http.client
import io
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from serving import binary_from_env, free_port
from test_serve_faults import find_psql, fresh_database, psql, server_env

REPO = Path(__file__).resolve().parents[2]
HAPROXY_CFG = REPO / "deploy" / "haproxy" / "haproxy.cfg"
REPLICAS = 3
START_TIMEOUT_S = 30.0
# The configuration's checks: a replica is out after two failed checks 500 ms apart.
OUT_OF_ROTATION_S = 5.0
# `toolbelt serve` lets open connections finish for at most this long
# (toolbelt_server::http::SHUTDOWN_GRACE_SECS), then the scheduler stops (2-3 s).
SHUTDOWN_GRACE_S = 10.0
CALL_TIMEOUT_S = 60.0
MIXED_CALLS = 1_000
CLIENTS = 8
SPILL_LINES = 30_000
PAGE_LINES = 2_000
# How long a call's record may take to reach the store after its answer.
LOG_FLUSH_S = 10.0
NUMBERED_LINE = re.compile(r"^\s*(\d+)\t(.*)$")


def require(what: str) -> None:
    """Skips (locally) or fails (CI: TOOLBELT_REQUIRE_REPLICAS=1) for a missing part."""
    if os.environ.get("TOOLBELT_REQUIRE_REPLICAS") == "1":
        pytest.fail(f"{what} (TOOLBELT_REQUIRE_REPLICAS=1: this test must run here)")
    pytest.skip(what)


# ----------------------------------------------------------------------------- HTTP


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Answer:
    status: int
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def request(port: int, method: str, path: str, token: str, body: Any = None, timeout: float = CALL_TIMEOUT_S) -> Answer:
    """One request on a new connection to 127.0.0.1:`port`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = bearer(token) if token else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        return Answer(response.status, response.read())
    finally:
        conn.close()


def call(port: int, token: str, tool: str, args: dict[str, Any], timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:
    """A tool call through /v1 that must be answered 200 with an envelope that is not an error."""
    answer = request(port, "POST", f"/v1/tools/{tool}", token, args, timeout)
    assert answer.status == 200, f"{tool} {args}: {answer.status} {answer.body[:300]!r}"
    envelope = answer.json()
    assert envelope.get("status") in ("success", "partial"), f"{tool} {args}: {envelope}"
    return envelope


# ------------------------------------------------------------------------- cluster


@dataclass
class Replica:
    index: int
    port: int
    state: Path
    log: Path
    argv: list[str]
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self, token: str) -> None:
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"\n==== start {self.starts}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            assert self.proc.poll() is None, f"replica {self.index} exited ({self.proc.returncode}): {self.log_tail()}"
            try:
                if request(self.port, "GET", "/healthz", token, timeout=2).status == 200:
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, f"replica {self.index} did not become healthy: {self.log_tail()}"
            time.sleep(0.05)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 25) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@dataclass
class Cluster:
    token: str
    replicas: list[Replica]
    lb_port: int  # round robin: /v1, MCP 2026-07-28
    lb_mcp_port: int  # a session stays on its replica
    stats_socket: Path
    db_url: str
    psql: str
    root: Path
    ticks_file: Path
    model: Any
    haproxy: subprocess.Popen[bytes]
    haproxy_log: Path
    workspace_files: dict[str, str] = field(default_factory=dict)

    def stats(self) -> dict[tuple[str, str], dict[str, str]]:
        """HAProxy's `show stat`, by (proxy, server)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(str(self.stats_socket))
            s.sendall(b"show stat\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        text = data.decode().lstrip("# ")
        return {(row["pxname"], row["svname"]): row for row in csv.DictReader(io.StringIO(text)) if row.get("pxname")}

    def server_status(self, index: int, backend: str = "toolbelt_replicas") -> str:
        return self.stats()[(backend, f"replica{index + 1}")]["status"]

    def served(self, backend: str = "toolbelt_replicas") -> list[int]:
        """Connections each replica took from the balancer so far (one per request)."""
        stats = self.stats()
        return [int(stats[(backend, f"replica{i + 1}")]["stot"] or 0) for i in range(REPLICAS)]

    def wait_status(self, index: int, up: bool, within: float) -> float:
        """Waits until HAProxy has replica `index` up (or down) in both backends; seconds taken."""
        started = time.monotonic()
        while True:
            states = [self.server_status(index, b) for b in ("toolbelt_replicas", "toolbelt_replicas_sticky")]
            if all(s.startswith("UP" if up else "DOWN") and "/" not in s for s in states):
                return time.monotonic() - started
            assert time.monotonic() - started < within, f"replica {index} is {states} after {within} s in HAProxy"
            time.sleep(0.1)

    def ensure_all_up(self) -> None:
        for replica in self.replicas:
            if not replica.alive():
                replica.start(self.token)
        for replica in self.replicas:
            self.wait_status(replica.index, up=True, within=START_TIMEOUT_S)

    def sql(self, query: str) -> list[list[str]]:
        return psql(self.psql, self.db_url, query)


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)), None)


ASK = {
    "questions": [
        {
            "header": "Storage",
            "question": "Where should the sessions be stored?",
            "options": [
                {"label": "SQLite", "description": "one file beside the app"},
                {"label": "PostgreSQL", "description": "the existing database server"},
            ],
        }
    ]
}
MODEL_SCRIPT = {
    "kind": "openai",
    "replies": [
        {"tool_calls": [{"name": "ask_user", "arguments": json.dumps(ASK)}]},
        {"text": "PostgreSQL it is."},
    ],
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    url = os.environ.get("TOOLBELT_TEST_DATABASE_URL", "").strip()
    if not url:
        require("TOOLBELT_TEST_DATABASE_URL is not set: the replicas share a PostgreSQL database (`.ci/postgres start DIR` prints one)")
    haproxy = haproxy_binary()
    if haproxy is None:
        require("haproxy is not installed (Debian: apt-get install haproxy)")
    psql_bin = find_psql()
    if psql_bin is None:
        require("psql is not installed (Debian: postgresql-client)")
    toolbelt_bin = binary_from_env()
    from test_providers import serve as scripted_model  # the scripted provider beside the binary

    tmp = tmp_path_factory.mktemp("replicas")
    with ExitStack() as stack:
        db_url, _ = stack.enter_context(fresh_database(url))
        model = stack.enter_context(scripted_model(tmp, MODEL_SCRIPT))
        root = tmp / "ws"
        root.mkdir()
        files = {"notes.md": "".join(f"note {i}\n" for i in range(1, 41)), "src/lib.rs": "pub fn answer() -> u32 {\n    42\n}\n"}
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        ticks_file = tmp / "ticks.jsonl"
        config = tmp / "toolbelt.toml"
        config.write_text(
            f'[channels.ticks]\nkind = "file"\npath = {json.dumps(str(ticks_file))}\n'
            f'[agent]\nprovider = "openai"\nmodel = "scripted-model"\nbase_url = "{model.base_url}"\n'
        )
        token = secrets.token_hex(24)
        env = {
            **server_env(tmp),
            "RUST_LOG": os.environ.get("RUST_LOG", "warn"),
            "TOOLBELT_TOKEN": token,
            "TOOLBELT_DATABASE_URL": db_url,
        }
        for name in ("TOOLBELT_AGENT_PROVIDER", "TOOLBELT_AGENT_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
            env.pop(name, None)
        replicas = []
        for i in range(REPLICAS):
            port = free_port()
            state = tmp / f"state-{i}"
            argv = [toolbelt_bin, "serve", "--bind", f"127.0.0.1:{port}", "--root", str(root), "--state-dir", str(state), "--config", str(config)]
            replicas.append(Replica(i, port, state, tmp / f"replica-{i}.log", argv, env))

        def stop_replicas() -> None:
            for r in replicas:
                if r.alive():
                    assert r.proc is not None
                    r.proc.terminate()
            for r in replicas:
                if r.proc is not None and r.proc.poll() is None:
                    try:
                        r.proc.wait(timeout=SHUTDOWN_GRACE_S + 5)
                    except subprocess.TimeoutExpired:
                        r.proc.kill()
                        r.proc.wait()

        stack.callback(stop_replicas)
        for r in replicas:
            r.start(token)

        lb_port, lb_mcp_port = free_port(), free_port()
        stats_socket = tmp / "haproxy.sock"
        # The test's own addition: a stats socket, to see which replica took what.
        extra = tmp / "stats.cfg"
        extra.write_text(f"global\n    stats socket {stats_socket} mode 600 level admin\n")
        lb_env = {
            **os.environ,
            "TOOLBELT_LB_BIND": f"127.0.0.1:{lb_port}",
            "TOOLBELT_LB_MCP_BIND": f"127.0.0.1:{lb_mcp_port}",
            **{f"TOOLBELT_REPLICA_{r.index + 1}": f"127.0.0.1:{r.port}" for r in replicas},
        }
        haproxy_log = tmp / "haproxy.log"
        with haproxy_log.open("wb") as out:
            lb = subprocess.Popen(
                [haproxy, "-f", str(HAPROXY_CFG), "-f", str(extra)], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=lb_env
            )

        def stop_haproxy() -> None:
            lb.terminate()
            try:
                lb.wait(timeout=5)
            except subprocess.TimeoutExpired:
                lb.kill()
                lb.wait()

        stack.callback(stop_haproxy)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not stats_socket.exists():
            assert lb.poll() is None, f"haproxy exited: {haproxy_log.read_text()}"
            assert time.monotonic() < deadline, f"haproxy did not start: {haproxy_log.read_text()}"
            time.sleep(0.05)
        c = Cluster(token, replicas, lb_port, lb_mcp_port, stats_socket, db_url, psql_bin, root, ticks_file, model, lb, haproxy_log, files)
        c.ensure_all_up()
        yield c


# --------------------------------------------------------------------------- cases


def test_replicas_health_names_each_replica_and_its_store(cluster: Cluster) -> None:
    seen = []
    for r in cluster.replicas:
        answer = request(r.port, "GET", "/healthz", "")  # no token needed
        assert answer.status == 200, answer.body
        body = answer.json()
        assert body["status"] == "ok" and body["scheduler"] == "running", body
        assert body["store"]["backend"] == "postgres" and body["store"]["reachable"] is True, body
        seen.append(body["replica"])
    assert len(set(seen)) == REPLICAS, seen
    through = request(cluster.lb_port, "GET", "/healthz", "")
    assert through.status == 200 and through.json()["replica"] in seen, through.body


def read_all_pages(cluster: Cluster, output_id: str, total: int) -> tuple[list[str], list[int]]:
    """Every line of a saved output, a page per request through the balancer (each
    request on a new connection, so round robin spreads them); the lines and how
    many requests each replica took."""
    before = cluster.served()
    lines: dict[int, str] = {}
    offset, problems = 1, []
    while offset is not None:
        answer = request(cluster.lb_port, "POST", "/v1/tools/read_output", cluster.token, {"output_id": output_id, "offset": offset, "limit": PAGE_LINES})
        envelope = answer.json() if answer.status == 200 else {}
        if answer.status != 200 or envelope.get("status") != "success":
            problems.append(f"offset {offset}: {answer.status} {envelope.get('text', answer.body)[:300]!r}")
            break
        for line in envelope["text"].splitlines():
            if m := NUMBERED_LINE.match(line):
                lines[int(m.group(1))] = m.group(2)
        offset = envelope["data"].get("next_offset")
    after = cluster.served()
    assert not problems, f"a page could not be read through the balancer: {problems}"
    assert sorted(lines) == list(range(1, total + 1)), f"{len(lines)} of {total} lines read"
    return [lines[n] for n in range(1, total + 1)], [a - b for a, b in zip(after, before)]


def test_replicas_a_spilled_output_is_read_page_by_page_through_any_replica(cluster: Cluster) -> None:
    cluster.ensure_all_up()
    spilled = call(cluster.lb_port, cluster.token, "bash", {"command": f"seq 1 {SPILL_LINES}"})
    assert spilled["status"] == "partial", spilled["text"][-400:]
    output_id = spilled["data"]["output_id"]
    lines, per_replica = read_all_pages(cluster, output_id, SPILL_LINES)
    assert lines == [str(n) for n in range(1, SPILL_LINES + 1)]
    assert sum(1 for n in per_replica if n > 0) >= 2, f"the pages were not spread over the replicas: {per_replica}"


@dataclass
class Book:
    """What one client sent and got."""

    acked: list[str] = field(default_factory=list)  # call ids of the answers received
    errors: list[str] = field(default_factory=list)
    error_times: list[float] = field(default_factory=list)


def mixed_call(i: int, client: int) -> tuple[str, dict[str, Any]]:
    kind = i % 6
    if kind == 0:
        return "think", {"thought": f"client {client} call {i}"}
    if kind == 1:
        return "read_file", {"path": "notes.md", "offset": 1 + i % 30, "limit": 5}
    if kind == 2:
        return "grep", {"pattern": "note 1", "path": "notes.md"}
    if kind == 3:
        return "write_file", {"path": f"out/c{client}/f{i}.txt", "content": f"{client} {i}\n"}
    if kind == 4:
        return "set_todo_list", {"list": f"c{client}", "todos": [{"title": f"step {i}", "status": "Pending"}]}
    return "bash", {"command": f"echo {client}-{i}"}


def run_client(cluster: Cluster, client: int, calls: int | None, stop: threading.Event, book: Book) -> None:
    """Calls through the balancer on one kept-alive connection (a new one after a
    failure) until `calls` are made or `stop` is set."""
    conn: http.client.HTTPConnection | None = None
    i = 0
    while (calls is None or i < calls) and not stop.is_set():
        tool, args = mixed_call(i, client)
        i += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", cluster.lb_port, timeout=CALL_TIMEOUT_S)
            conn.request("POST", f"/v1/tools/{tool}", body=json.dumps(args).encode(), headers={**bearer(cluster.token), "Content-Type": "application/json"})
            response = conn.getresponse()
            data = response.read()
            envelope = json.loads(data) if response.headers.get("Content-Type", "").startswith("application/json") else {}
            if response.status == 200 and envelope.get("status") in ("success", "partial"):
                book.acked.append(envelope["context"]["call_id"])
            else:
                book.errors.append(f"{tool}: {response.status} {data[:200]!r}")
                book.error_times.append(time.monotonic())
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException, ValueError) as e:
            book.errors.append(f"{tool}: {e!r}")
            book.error_times.append(time.monotonic())
            if conn is not None:
                conn.close()
            conn = None
    if conn is not None:
        conn.close()


def test_replicas_1000_mixed_calls_from_8_clients_without_an_error(cluster: Cluster) -> None:
    cluster.ensure_all_up()
    books = [Book() for _ in range(CLIENTS)]
    stop = threading.Event()
    before = cluster.served()
    started = time.monotonic()
    threads = [threading.Thread(target=run_client, args=(cluster, c, MIXED_CALLS // CLIENTS, stop, books[c]), daemon=True) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    elapsed = time.monotonic() - started
    per_replica = [a - b for a, b in zip(cluster.served(), before)]
    errors = [e for b in books for e in b.errors]
    acked = sum(len(b.acked) for b in books)
    print(f"{acked} calls in {elapsed:.1f} s through the balancer; per replica {per_replica}")
    assert not any(t.is_alive() for t in threads), "a client is stuck"
    assert not errors, f"{len(errors)} errors: {errors[:10]}"
    assert acked == MIXED_CALLS
    assert min(per_replica) > MIXED_CALLS // (2 * REPLICAS), f"round robin did not spread the calls: {per_replica}"


# ------------------------------------------------------------------------------ MCP


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or the one given."""
    inner = getattr(error, "exceptions", None)
    if not inner:
        return [error]
    return [leaf for e in inner for leaf in leaves(e)]


class Statuses:
    """The HTTP statuses the SDK's client got, by request method."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int]] = []

    async def hook(self, response: httpx.Response) -> None:
        self.seen.append((response.request.method, response.status_code))

    def server_errors(self) -> list[tuple[str, int]]:
        return [s for s in self.seen if s[1] >= 500]

    def not_found(self) -> int:
        return sum(1 for _, status in self.seen if status == 404)


def sdk_http(cluster: Cluster, statuses: Statuses) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        headers=bearer(cluster.token),
        timeout=httpx.Timeout(30.0, read=CALL_TIMEOUT_S),
        event_hooks={"response": [statuses.hook]},
    )


async def session_of_calls(client: Client, calls: int, tag: str) -> list[str]:
    """`calls` tool calls on one session; the problems."""
    problems = []
    for i in range(calls):
        if i % 2 == 0:
            result = await client.call_tool("think", {"thought": f"{tag} {i}"})
        else:
            result = await client.call_tool("read_file", {"path": "notes.md", "offset": 1 + i % 30, "limit": 3})
        if result.is_error:
            problems.append(f"call {i}: {result}")
    return problems


def test_replicas_mcp_newest_revision_round_robin(cluster: Cluster) -> None:
    cluster.ensure_all_up()
    statuses = Statuses()
    before = cluster.served()

    async def main() -> list[str]:
        async with sdk_http(cluster, statuses) as http_client:
            transport = streamable_http_client(f"http://127.0.0.1:{cluster.lb_port}/mcp", http_client=http_client)
            with anyio.fail_after(120):
                async with Client(transport, mode="auto", read_timeout_seconds=CALL_TIMEOUT_S) as client:
                    assert client.protocol_version == "2026-07-28", client.protocol_version
                    return await session_of_calls(client, 50, "newest")

    problems = anyio.run(main)
    per_replica = [a - b for a, b in zip(cluster.served(), before)]
    assert not problems, problems
    assert not statuses.server_errors() and statuses.not_found() == 0, statuses.seen
    assert all(n >= 10 for n in per_replica), f"the session's requests were not spread over the replicas: {per_replica}"


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
def test_replicas_mcp_older_revision_keeps_its_replica(cluster: Cluster, version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Older revisions have sessions: the frontend with the stick table keeps each on
    the replica that opened it."""
    import mcp.client.session as sdk_session

    cluster.ensure_all_up()
    monkeypatch.setattr(sdk_session, "LATEST_HANDSHAKE_VERSION", version)
    statuses = Statuses()

    async def main() -> list[str]:
        problems = []
        async with sdk_http(cluster, statuses) as http_client:
            for n in range(3):  # three sessions: the stick table sends each to its own replica
                transport = streamable_http_client(f"http://127.0.0.1:{cluster.lb_mcp_port}/mcp", http_client=http_client)
                with anyio.fail_after(120):
                    async with Client(transport, mode="legacy", read_timeout_seconds=CALL_TIMEOUT_S) as client:
                        assert client.protocol_version == version, client.protocol_version
                        problems += await session_of_calls(client, 50 if n == 0 else 10, f"{version} {n}")
        return problems

    problems = anyio.run(main)
    assert not problems, problems
    assert not statuses.server_errors() and statuses.not_found() == 0, statuses.seen


def test_replicas_mcp_older_revision_without_affinity_is_404_never_5xx(cluster: Cluster) -> None:
    cluster.ensure_all_up()
    lb = f"http://127.0.0.1:{cluster.lb_port}/mcp"
    headers = {**bearer(cluster.token), "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "lb-test", "version": "1"}},
    }
    with httpx.Client(timeout=30) as http_client:
        opened = http_client.post(lb, headers=headers, content=json.dumps(init))
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        named = {**headers, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
        http_client.post(lb, headers=named, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        seen = []
        for i in range(2, 11):
            answer = http_client.post(lb, headers=named, content=json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
            seen.append(answer.status_code)
            if answer.status_code == 404:
                assert answer.headers.get("content-type", "").startswith("application/json"), answer.text
                assert "initialize" in answer.json()["error"]["message"], answer.text
        ended = [http_client.delete(lb, headers=named).status_code for _ in range(REPLICAS)]
    assert set(seen) <= {200, 404} and 404 in seen and 200 in seen, seen
    assert set(ended) <= {204, 404} and 404 in ended, ended

    # The SDK's client: a 404 ends its session ("Session terminated") and it opens a
    # new one, as the specification says; without affinity the new one fares no
    # better (this is why older clients need the other frontend), but nothing is
    # ever an internal error.
    statuses = Statuses()

    async def main() -> tuple[int, int, list[str]]:
        answered, terminated, problems = 0, 0, []
        async with sdk_http(cluster, statuses) as http_client:
            for attempt in range(6):
                transport = streamable_http_client(lb, http_client=http_client)
                with anyio.fail_after(60):
                    try:
                        async with Client(transport, mode="legacy", read_timeout_seconds=20) as client:
                            for i in range(3):
                                await client.call_tool("think", {"thought": f"no affinity {attempt} {i}"})
                                answered += 1
                    except Exception as e:  # the SDK raises it inside exception groups
                        errors = leaves(e)
                        if all(isinstance(x, MCPError) and "Session terminated" in str(x) for x in errors):
                            terminated += 1
                        else:
                            problems.append(repr(errors))
        return answered, terminated, problems

    answered, terminated, problems = anyio.run(main)
    print(f"without affinity: {answered} calls answered, {terminated} sessions ended by a 404; statuses {Counter(statuses.seen)}")
    assert not problems, problems
    assert not statuses.server_errors(), statuses.seen
    assert terminated > 0 and statuses.not_found() > 0, statuses.seen
    opened = [s for s in statuses.seen if s == ("POST", 200)]
    assert len(opened) >= 6, f"a new session could not be opened after a 404: {statuses.seen}"


# ------------------------------------------------------------------------ prompt job


def test_replicas_a_prompt_jobs_run_and_question_are_shared(cluster: Cluster) -> None:
    cluster.ensure_all_up()
    first, second = cluster.replicas[0], cluster.replicas[1]
    job = f"sessions-{secrets.token_hex(3)}"
    call(first.port, cluster.token, "cron", {"action": "add", "name": job, "schedule": "every 1h", "prompt": "Set up the sessions."})
    try:
        call(first.port, cluster.token, "cron", {"action": "run_now", "name": job})
        # The question, listed by another replica.
        deadline = time.monotonic() + 30
        waiting: list[dict[str, Any]] = []
        while not waiting:
            answer = request(second.port, "GET", "/v1/questions", cluster.token)
            assert answer.status == 200, answer.body
            waiting = answer.json()["questions"]
            assert waiting or time.monotonic() < deadline, f"no question on replica 1 within 30 s: {first.log_tail()}"
            time.sleep(0.1)
        assert len(waiting) == 1, waiting
        asked = waiting[0]
        assert "Where should the sessions be stored?" in json.dumps(asked["questions"]), asked
        run_id = asked["run_id"]
        assert run_id, asked
        answered = request(second.port, "POST", f"/v1/questions/{asked['id']}", cluster.token, {"answers": [{"header": "Storage", "selected": ["PostgreSQL"]}]})
        assert answered.status == 200 and answered.json()["status"] == "answered", answered.body
        # The run goes on where it was started, with the answer.
        deadline = time.monotonic() + 30
        while len(cluster.model.requests()) < 2:
            assert time.monotonic() < deadline, f"the model was not asked again: {first.log_tail()}"
            time.sleep(0.05)
        sent = json.dumps(cluster.model.requests()[1]["body"])
        assert "PostgreSQL" in sent, sent
        # Each replica lists the run and shows it step by step, to its end.
        for r in cluster.replicas:
            deadline = time.monotonic() + 20
            while True:
                listed = request(r.port, "GET", "/v1/agent/runs", cluster.token).json()
                run = next((x for x in listed.get("runs", []) if x.get("id") == run_id), None)
                detail = request(r.port, "GET", f"/v1/agent/runs/{run_id}", cluster.token)
                text = detail.body.decode(errors="replace")
                if run and detail.status == 200 and "PostgreSQL it is." in text and run.get("outcome"):
                    break
                assert time.monotonic() < deadline, f"replica {r.index}: run {run_id} not listed whole: {run} {detail.status} {text[:500]}"
                time.sleep(0.2)
            assert "Where should the sessions be stored?" in text, f"replica {r.index}: {text[:800]}"
        assert not request(second.port, "GET", "/v1/questions", cluster.token).json()["questions"]
    finally:
        call(first.port, cluster.token, "cron", {"action": "remove", "name": job})


# ------------------------------------------------------------------------ kill -9


def ticks(cluster: Cluster, job_id: str) -> list[tuple[int, str, int]]:
    """The job's firings: (scheduled_for, instance, fired_at), in order."""
    rows = cluster.sql(f"SELECT scheduled_for, instance, fired_at FROM cron_firings WHERE job_id = {job_id} ORDER BY scheduled_for")
    return [(int(a), b, int(c)) for a, b, c in rows]


def logged_call_ids(cluster: Cluster) -> set[str]:
    """Every call id in the shared call log, read through the balancer."""
    ids: set[str] = set()
    before: int | None = None
    while True:
        path = "/v1/calls?limit=500" + (f"&before={before}" if before is not None else "")
        answer = request(cluster.lb_port, "GET", path, cluster.token)
        assert answer.status == 200, answer.body[:300]
        page = answer.json()
        ids.update(c["call_id"] for c in page["calls"])
        before = page.get("next_before")
        if before is None:
            return ids


def test_replicas_kill_9_loses_no_answered_call_and_cron_goes_on(cluster: Cluster) -> None:
    cluster.ensure_all_up()
    victim = cluster.replicas[0]
    assert victim.proc is not None
    # An output spilled on the replica about to die.
    spilled = call(victim.port, cluster.token, "bash", {"command": "seq 1 5000"})
    assert spilled["status"] == "partial"
    output_id = spilled["data"]["output_id"]
    job = f"tick-{secrets.token_hex(3)}"
    call(cluster.lb_port, cluster.token, "cron", {"action": "add", "name": job, "schedule": "every 1s", "message": f"tick of {job}", "channel": "ticks"})
    job_id = cluster.sql(f"SELECT id FROM cron_jobs WHERE name = '{job}'")[0][0]
    try:
        books = [Book() for _ in range(CLIENTS)]
        stop = threading.Event()
        threads = [threading.Thread(target=run_client, args=(cluster, c, None, stop, books[c]), daemon=True) for c in range(CLIENTS)]
        for t in threads:
            t.start()
        time.sleep(3.0)
        victim.proc.kill()
        victim.proc.wait()
        killed_ms = int(time.time() * 1000)
        out_after = cluster.wait_status(victim.index, up=False, within=OUT_OF_ROTATION_S)
        out_at = time.monotonic()
        time.sleep(4.0)
        stop.set()
        for t in threads:
            t.join(timeout=CALL_TIMEOUT_S)
        assert not any(t.is_alive() for t in threads), "a client is stuck"
        acked = [i for b in books for i in b.acked]
        late_errors = [e for b in books for e, at in zip(b.errors, b.error_times) if at > out_at + 0.5]
        all_errors = [e for b in books for e in b.errors]
        print(f"kill -9: {len(acked)} calls answered, {len(all_errors)} errors around the kill; out of rotation after {out_after:.1f} s")
        assert len(acked) > 100, f"too few calls answered: {len(acked)}"
        problems = []
        if late_errors:
            problems.append(f"errors after HAProxy took the replica out: {late_errors[:10]}")

        # What it spilled before the kill is still readable, through the survivors.
        try:
            lines, _ = read_all_pages(cluster, output_id, 5000)
            if lines != [str(n) for n in range(1, 5001)]:
                problems.append("the output spilled on the killed replica reads back different")
        except AssertionError as e:
            problems.append(f"the output spilled on the killed replica: {e}")

        # The job went on once per tick, on the survivors too.
        fired = ticks(cluster, job_id)
        # A tick claimed late (every scheduler busy for over a second: a loaded
        # machine) moves the job on to its first time after the claim, as a missed
        # run fires once; any other gap is a tick lost.
        lost = [
            (a, b, at)
            for (a, _, at), (b, _, _) in zip(fired, fired[1:])
            if b - a != 1000 and not (b - a > 1000 and at >= b - 1000)
        ]
        if lost:
            problems.append(f"ticks lost or doubled (scheduled_for, next, claimed at): {lost}")
        late = [(a, at - a) for a, _, at in fired if at - a >= 1000]
        victim_pid = str(victim.proc.pid)
        after = [(s, inst) for s, inst, at in fired if at > killed_ms + 1000]
        if len(after) < 3:
            problems.append(f"{len(after)} ticks after the kill: {fired[-5:]}")
        if any(inst.split("-")[0] == victim_pid for _, inst in after):
            problems.append(f"the killed replica fired after its death: {after}")
        by_instance = Counter(inst for _, inst, _ in fired)
        delivered = [json.loads(line) for line in cluster.ticks_file.read_text().splitlines() if line.strip()] if cluster.ticks_file.exists() else []
        ids = Counter(line["id"] for line in delivered if line.get("content") == f"tick of {job}")
        doubled = {i: n for i, n in ids.items() if n > 1}
        if doubled:
            problems.append(f"messages delivered twice: {doubled}")
        print(f"ticks: {len(fired)} firings by {dict(by_instance)}; {len(ids)} delivered; claimed a second late or more: {late}")

        # Every answered call is in the call log: at once, or (the killed replica's
        # last ones, journalled before their answers left) once it starts again on
        # its state directory and writes what its journal holds.
        missing_while_down = set(acked) - logged_call_ids(cluster)
        victim.start(cluster.token)
        cluster.wait_status(victim.index, up=True, within=START_TIMEOUT_S)
        deadline = time.monotonic() + LOG_FLUSH_S
        while True:
            missing = set(acked) - logged_call_ids(cluster)
            if not missing or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        print(f"answered calls not in the call log: {len(missing_while_down)} while the replica was down, {len(missing)} after its restart")
        if missing:
            problems.append(f"{len(missing)} of {len(acked)} answered calls are not in the call log: {sorted(missing)[:5]}")
        assert not problems, "\n".join(problems)
    finally:
        call(cluster.lb_port, cluster.token, "cron", {"action": "remove", "name": job})
        if not victim.alive():
            victim.start(cluster.token)
    cluster.wait_status(victim.index, up=True, within=START_TIMEOUT_S)


# ------------------------------------------------------------------------- SIGTERM


def test_replicas_sigterm_finishes_the_call_under_way_and_takes_no_new_one(cluster: Cluster) -> None:
    cluster.ensure_all_up()
    target = cluster.replicas[1]
    assert target.proc is not None
    result: dict[str, Any] = {}

    def slow_call() -> None:
        try:
            result["answer"] = request(target.port, "POST", "/v1/tools/bash", cluster.token, {"command": "sleep 2; echo finished"})
        except OSError as e:
            result["error"] = repr(e)

    under_way = threading.Thread(target=slow_call, daemon=True)
    under_way.start()
    time.sleep(0.5)
    target.proc.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    # New connections are refused at once.
    refused = False
    while time.monotonic() - signalled < 1.0:
        try:
            socket.create_connection(("127.0.0.1", target.port), timeout=0.2).close()
        except OSError:
            refused = True
            break
        time.sleep(0.02)
    assert refused, "the stopping replica still takes connections"
    # The balancer sends the calls elsewhere.
    for i in range(20):
        call(cluster.lb_port, cluster.token, "think", {"thought": f"while one drains {i}"})
    under_way.join(timeout=CALL_TIMEOUT_S)
    answer = result.get("answer")
    assert answer is not None, result
    assert answer.status == 200, answer.body
    envelope = answer.json()
    assert envelope["status"] == "success" and "finished" in envelope["text"], envelope
    code = target.proc.wait(timeout=SHUTDOWN_GRACE_S + 5)
    took = time.monotonic() - signalled
    assert code == 0, f"exit status {code}: {target.log_tail()}"
    assert took < SHUTDOWN_GRACE_S, f"exited {took:.1f} s after SIGTERM: {target.log_tail()}"
    cluster.wait_status(target.index, up=False, within=OUT_OF_ROTATION_S)
    target.start(cluster.token)
    cluster.wait_status(target.index, up=True, within=START_TIMEOUT_S)
