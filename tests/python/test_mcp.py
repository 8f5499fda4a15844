"""Drives `toolbelt mcp` (stdio) and `toolbelt serve` (streamable HTTP) from the outside
with the official MCP Python SDK client.

The binary under test comes from the environment: TOOLBELT_BIN=/path/to/toolbelt.
Run through tests/python/run.sh, which creates the virtual environment first.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from jsonschema import Draft202012Validator
from mcp import Client, StdioServerParameters
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp.client.streamable_http import streamable_http_client
from serving import binary_from_env, free_port, toolbelt_serve

BUILTINS = {
    "think",
    "ask_user",
    "set_todo_list",
    "read_output",
    "read_file",
    "write_file",
    "edit_file",
    "multi_edit",
    "apply_patch",
    "checkpoint_list",
    "checkpoint_diff",
    "rewind",
    "list_dir",
    "diagnostics",
    "glob",
    "grep",
    "bash",
    "bash_output",
    "write_stdin",
    "kill_shell",
    "list_shells",
    "web_fetch",
    "web_search",
    "update_todos",
    "create_project",
    "update_project",
    "delete_project",
    "get_project",
    "list_projects",
    "create_goal",
    "link_goal_to_project",
    "list_goals",
    "create_task",
    "complete_task",
    "list_tasks",
    "write_review",
    "list_reviews",
    "analyze_patterns",
    "skill",
    "message",
    "cron",
}

# "legacy" speaks the initialize handshake (2025-11-25 and earlier); "auto" probes
# server/discover first and so uses the 2026-07-28 revision when the server offers it.
MODES = ["legacy", "auto"]

# A search that takes seconds on the wide tree (about 1.5 s on a release build, 20 s on a
# debug build): no literal to look for, and Unicode word boundaries over accented text
# keep the regex engine off its fastest paths. It compiles at once.
SLOW_GREP = {"pattern": r"\b\w{3}\b\s\p{Lu}", "timeout_ms": 120_000}
WIDE_TREE_DIRS = 20
WIDE_TREE_FILES_PER_DIR = 100

CALL_TIMEOUT_S = 120.0
SERVER_START_TIMEOUT_S = 30.0


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def toolbelt_bin() -> str:
    return binary_from_env()


# Where the search_engine fixture listens, for web_fetch to read it back.
SEARCH_URL: list[str] = [""]

SEARCH_ANSWER = json.dumps(
    {
        "query": "rust",
        "results": [
            {"url": "https://tokio.rs/", "title": "Tokio", "content": "An async runtime.", "engine": "duckduckgo"},
        ],
    }
).encode()


@pytest.fixture(scope="session")
def search_engine() -> Iterator[str]:
    """A SearXNG-like engine on 127.0.0.1 answering every search with one result."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            if "missing" in self.path:
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(SEARCH_ANSWER)))
            self.end_headers()
            self.wfile.write(SEARCH_ANSWER)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    SEARCH_URL[:] = [url]
    yield url
    server.shutdown()


@pytest.fixture
def workspace(tmp_path: Path, search_engine: str) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "toolbelt.toml").write_text(
        f'[web]\nsearch = "searxng"\nsearch_url = "{search_engine}"\nallow_private_network = true\n'
        # A channel, for the message and cron tools.
        '[channels.local]\nkind = "file"\n'
    )
    (root / "src" / "main.rs").write_text('fn main() {\n    println!("hello");\n}\n')
    (root / "src" / "lib.rs").write_text("pub fn answer() -> u32 {\n    41\n}\n")
    (root / "notes.md").write_text("# Notes\n\nfirst\nsecond\n")
    # A skill of the workspace's own, for the skill tool.
    (root / ".toolbelt" / "skills" / "greet").mkdir(parents=True)
    (root / ".toolbelt" / "skills" / "greet" / "SKILL.md").write_text(
        "---\nname: greet\ndescription: Greets the user by name.\n---\nSay hello, using the user's name.\n"
    )
    # A 1x1 PNG, for an image read.
    (root / "pixel.png").write_bytes(
        bytes.fromhex(
            "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
            "0000000c4944415478da63f8cfc000000301010018dd8db40000000049454e44ae426082"
        )
    )
    # Enough matching lines that a grep's output is spilled and read back with read_output.
    (root / "log.txt").write_text("".join(f"line {i} needle\n" for i in range(5000)))
    return root


@pytest.fixture(scope="session")
def wide_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wide")
    line = " ".join(["alpha", "béta", "gamma", "délta", "epsilon", "zeta", "thêta", "kappa"] * 2) + "\n"
    body = line * 200
    for d in range(WIDE_TREE_DIRS):
        sub = root / f"d{d:02}"
        sub.mkdir()
        for f in range(WIDE_TREE_FILES_PER_DIR):
            (sub / f"f{f:03}.txt").write_text(body)
    return root


@pytest.fixture(scope="session", autouse=True)
def state_home() -> Iterator[Path]:
    """The servers' XDG_STATE_HOME: their state never lands in the user's own."""
    home = Path(tempfile.mkdtemp(prefix="toolbelt-state-"))
    STATE_HOME.append(home)
    yield home
    STATE_HOME.clear()
    shutil.rmtree(home, ignore_errors=True)


STATE_HOME: list[Path] = []


# ----------------------------------------------------------------------------- helpers


def stdio_client(toolbelt_bin: str, root: Path, mode: str) -> Client:
    params = StdioServerParameters(
        command=toolbelt_bin,
        args=["mcp", "--root", str(root)],
        env={
            "RUST_LOG": os.environ.get("RUST_LOG", "warn"),
            "XDG_STATE_HOME": str(STATE_HOME[0]),
        },
        cwd=str(root),
    )
    return Client(params, mode=mode, read_timeout_seconds=CALL_TIMEOUT_S, elicitation_callback=pick_first)


async def pick_first(context: Any, params: Any) -> Any:
    """The client's user, answering ask_user's questions with their first options."""
    import mcp_types

    picked = {
        key: field["oneOf"][0]["const"]
        for key, field in params.requested_schema["properties"].items()
        if "oneOf" in field
    }
    return mcp_types.ElicitResult(action="accept", content=picked)


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def envelope(result: Any) -> dict[str, Any]:
    env = result.structured_content
    assert isinstance(env, dict), f"structuredContent is not the envelope: {result!r}"
    return env


def assert_conforms(schemas: dict[str, Any], tool: str, result: Any) -> None:
    """The result's structuredContent is valid against the tool's outputSchema, by a
    strict JSON Schema 2020-12 validator (the schema itself checked first, formats
    too)."""
    schema = schemas[tool]
    assert schema is not None, f"{tool} has no outputSchema"
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    violations = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(result.structured_content)]
    assert not violations, f"{tool}: structuredContent does not match its outputSchema: {violations[:5]}"


async def output_schemas(client: Client) -> dict[str, Any]:
    return {t.name: t.output_schema for t in (await client.list_tools()).tools}


def assert_ok(result: Any, tool: str) -> dict[str, Any]:
    env = envelope(result)
    assert not result.is_error, f"{tool} failed: {text_of(result)}"
    assert env["status"] in ("success", "partial"), f"{tool}: {env}"
    # The envelope's text is the text content, word for word.
    assert text_of(result) == env["text"]
    return env


def server_pids(toolbelt_bin: str) -> list[int]:
    """Children of this process running the toolbelt binary (the stdio server)."""
    me = os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            exe = os.readlink(f"/proc/{entry}/exe")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and os.path.realpath(exe) == os.path.realpath(toolbelt_bin):
            found.append(int(entry))
    return found


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------- stdio: listing


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_initialize_and_list_tools(toolbelt_bin: str, workspace: Path, mode: str) -> None:
    async with stdio_client(toolbelt_bin, workspace, mode) as client:
        assert client.server_info is not None and client.server_info.name
        assert client.server_capabilities.tools is not None
        if mode == "auto":
            assert client.protocol_version == "2026-07-28", (
                f"the 2026-07-28 revision was not negotiated (got {client.protocol_version})"
            )
        if mode == "legacy":
            await client.send_ping()  # ping is gone from the 2026-07-28 revision
        listed = await client.list_tools()
        tools = {t.name: t for t in listed.tools}
        assert set(tools) == BUILTINS
        for name, tool in tools.items():
            assert tool.title, name
            assert tool.description and len(tool.description) > 40, name
            assert tool.input_schema.get("type") == "object", name
            assert tool.output_schema is not None, name
            assert tool.annotations is not None, name
        assert tools["read_file"].annotations.read_only_hint is True
        assert tools["grep"].annotations.read_only_hint is True
        assert tools["write_file"].annotations.read_only_hint is False
        assert tools["write_file"].annotations.destructive_hint is True
        assert tools["read_file"].input_schema["required"] == ["path"]


# ------------------------------------------------------------------------ stdio: calls


async def call_every_builtin(client: Client, root: Path) -> set[str]:
    """Calls each built-in with valid arguments, each result checked against the
    tool's outputSchema; returns the names called."""
    called: set[str] = set()
    schemas = await output_schemas(client)

    async def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(name, args)
        called.add(name)
        assert_conforms(schemas, name, result)
        return assert_ok(result, name)

    env = await call("think", {"thought": "Read main.rs, then change the greeting."})
    assert env["status"] == "success"

    # The client's user answers by elicitation (pick_first).
    question = {"header": "Greeting", "question": "Which greeting?", "options": [{"label": "Hello"}, {"label": "Hi"}]}
    env = await call("ask_user", {"questions": [question]})
    assert "- Greeting: Hello" in env["text"], env["text"]

    env = await call("skill", {"name": "greet"})
    assert "Say hello, using the user's name." in env["text"]

    env = await call("web_search", {"query": "rust", "limit": 3})
    assert env["data"]["results"][0]["url"] == "https://tokio.rs/"
    assert env["text"].startswith("# Search Results for: rust")
    env = await call("web_fetch", {"url": SEARCH_URL[0]})
    assert '"url": "https://tokio.rs/"' in env["data"]["content"]

    env = await call("set_todo_list", {"todos": [{"title": "change the greeting", "status": "In Progress"}]})
    todo_id = env["data"]["todos"][0]["id"]
    env = await call("update_todos", {"update": [{"id": todo_id, "status": "Done"}], "add": [{"title": "ship"}]})
    assert [(t["id"], t["status"]) for t in env["data"]["todos"]] == [(todo_id, "Done"), (todo_id + 1, "Pending")]

    # The planner: a goal, a project linked to it, tasks, a review, the patterns.
    goal = (await call("create_goal", {"title": "Learn Rust", "stage": "yearly", "deadline": "2027-06-30"}))["data"]["id"]
    project = (await call("create_project", {"name": "Rust book", "goal_ids": [goal]}))["data"]["id"]
    env = await call("update_project", {"project_id": project, "updates": {"status": "paused"}})
    assert env["data"]["status"] == "paused"
    other = (await call("create_goal", {"title": "Ship a crate", "stage": "quarter"}))["data"]["id"]
    env = await call("link_goal_to_project", {"goal_id": other, "project_id": project})
    task = (await call("create_task", {"title": "Chapter 1", "project_id": project, "priority": "high"}))["data"]["id"]
    await call("create_task", {"title": "Chapter 2", "project_id": project, "due_date": "2020-01-01"})
    env = await call("complete_task", {"task_id": task, "completion_note": "done"})
    env = await call("get_project", {"project_id": project, "include_stats": True})
    assert env["data"]["stats"]["completion_rate"] == 0.5, env["data"]
    assert env["data"]["stats"]["overdue_count"] == 1, env["data"]
    assert len((await call("list_projects", {}))["data"]["projects"]) == 1
    assert len((await call("list_goals", {"project_id": project}))["data"]["goals"]) == 2
    assert len((await call("list_tasks", {"status": "pending"}))["data"]["tasks"]) == 1
    await call("write_review", {"content": "今天进展顺利，完成了第一章", "type": "daily", "mood": 8, "tags": ["rust"], "linked_project_ids": [project]})
    assert (await call("list_reviews", {"tag": "rust"}))["data"]["total"] == 1
    env = await call("analyze_patterns", {"time_range": "week"})
    assert env["data"]["mood"]["average"] == 8.0, env["data"]
    env = await call("delete_project", {"project_id": project, "cascade": True})

    # A message through the file channel, and a job that sends one.
    env = await call("message", {"channel": "local", "content": "the greeting changes"})
    env = await call("cron", {"action": "add", "name": "daily", "schedule": "7 9 * * *", "message": "standup", "channel": "local"})
    env = await call("cron", {"action": "list"})
    assert "daily" in env["text"], env["text"]

    env = await call("list_dir", {})
    assert "src/" in env["text"] and "notes.md" in env["text"]

    env = await call("diagnostics", {"path": "src"})
    assert env["status"] == "success", env

    env = await call("glob", {"pattern": "**/*.rs", "sort": "path"})
    assert "src/lib.rs" in env["text"] and "src/main.rs" in env["text"]

    env = await call("grep", {"pattern": "println", "output_mode": "content"})
    assert "src/main.rs" in env["text"]

    # The optimistic lock: a file is read before it is edited.
    env = await call("read_file", {"path": "src/main.rs"})
    assert 'println!("hello");' in env["text"]

    env = await call("edit_file", {"path": "src/main.rs", "old_string": "hello", "new_string": "world"})
    assert (root / "src" / "main.rs").read_text() == 'fn main() {\n    println!("world");\n}\n'

    await call("read_file", {"path": "src/lib.rs"})
    await call(
        "multi_edit",
        {
            "path": "src/lib.rs",
            "edits": [
                {"old_string": "answer", "new_string": "the_answer"},
                {"old_string": "41", "new_string": "42"},
            ],
        },
    )
    assert (root / "src" / "lib.rs").read_text() == "pub fn the_answer() -> u32 {\n    42\n}\n"

    await call("write_file", {"path": "docs/guide.md", "content": "# Guide\n", "create_dirs": True})
    assert (root / "docs" / "guide.md").read_text() == "# Guide\n"

    await call("read_file", {"path": "notes.md"})
    patch = (
        "*** Begin Patch\n"
        "*** Add File: added.txt\n"
        "+made by apply_patch\n"
        "*** Update File: notes.md\n"
        "@@\n"
        " first\n"
        "-second\n"
        "+second, patched\n"
        "*** End Patch"
    )
    await call("apply_patch", {"patch": patch})
    assert (root / "added.txt").read_text() == "made by apply_patch\n"
    assert (root / "notes.md").read_text() == "# Notes\n\nfirst\nsecond, patched\n"

    env = await call("bash", {"command": "ls src && echo done >&2", "working_dir": "."})
    assert env["data"]["stdout"] == "lib.rs\nmain.rs\n" and env["data"]["exit_code"] == 0

    # Background shells: started at once, read, listed, fed input, stopped.
    env = await call("bash", {"command": "sleep 0.2; echo done", "run_in_background": True})
    done_id = env["data"]["shell_id"]
    assert env["data"]["status"] == "running"
    stdout = ""
    for _ in range(20):
        env = await call("bash_output", {"shell_id": done_id, "block": True, "timeout": 5})
        stdout += env["data"]["stdout"]
        if env["data"]["status"] != "running":
            break
    assert stdout == "done\n" and env["data"]["exit_code"] == 0
    env = await call("bash", {"command": "cat", "run_in_background": True})
    cat_id = env["data"]["shell_id"]
    env = await call("list_shells", {})
    assert [s["shell_id"] for s in env["data"]["shells"]] == [cat_id]
    env = await call("write_stdin", {"shell_id": cat_id, "chars": "ping\n"})
    assert env["data"]["stdout"] == "ping\n"
    env = await call("kill_shell", {"shell_id": cat_id})
    assert env["data"]["status"] == "killed"

    # A large output is saved; read_output pages through it.
    env = await call("grep", {"pattern": "needle", "output_mode": "content", "head_limit": 0})
    match = re.search(r"output_id=(out_[0-9a-zA-Z_]+)", env["text"])
    assert match, f"the grep output was not saved: {env['text'][-400:]}"
    env = await call("read_output", {"output_id": match.group(1), "offset": 10, "limit": 3})
    assert "line 9 needle" in env["text"]

    # The calls above that changed files left checkpoints: listed, shown, and a
    # rewind's dry run (the pick_first user approves it) changes nothing.
    env = await call("checkpoint_list", {"limit": 5})
    newest = env["data"]["checkpoints"][0]["id"]
    env = await call("checkpoint_diff", {"checkpoint": newest})
    assert env["data"]["files"], env["text"]
    env = await call("rewind", {"checkpoint": newest, "dry_run": True})
    assert env["data"]["dry_run"] is True

    return called


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_call_every_builtin(toolbelt_bin: str, workspace: Path, mode: str) -> None:
    async with stdio_client(toolbelt_bin, workspace, mode) as client:
        called = await call_every_builtin(client, workspace)
        failed = await fail_every_builtin(client)
    assert called == BUILTINS
    assert failed == BUILTINS


async def fail_every_builtin(client: Client) -> set[str]:
    """Errors of every built-in (and an image read): each result's structuredContent
    is valid against the tool's outputSchema; returns the names that failed."""
    schemas = await output_schemas(client)
    failed: set[str] = set()

    async def fail(name: str, args: dict[str, Any], code: str) -> dict[str, Any]:
        result = await client.call_tool(name, args)
        assert result.is_error is True, f"{name} {args} did not fail: {text_of(result)}"
        assert_conforms(schemas, name, result)
        env = envelope(result)
        assert env["error"]["code"] == code, f"{name}: {env['error']}"
        failed.add(name)
        return env

    for name in sorted(BUILTINS):
        await fail(name, {"not_a_parameter": 1}, "INVALID_PARAMS")
    # Errors a tool itself reports, with what it found.
    env = await fail("read_file", {"path": "note.md"}, "NOT_FOUND")
    assert "notes.md" in env["text"]
    await fail("bash", {"command": "echo out; exit 3"}, "NONZERO_EXIT")
    await fail("edit_file", {"path": "src/main.rs", "old_string": "no such text", "new_string": "x"}, "INVALID_PARAMS")
    await fail("edit_file", {"path": "log.txt", "old_string": "line 1 needle", "new_string": "x"}, "CONFLICT")
    await fail("web_fetch", {"url": SEARCH_URL[0] + "missing"}, "HTTP_STATUS")
    # An image: the text and the image as content, the envelope whole.
    result = await client.call_tool("read_file", {"path": "pixel.png"})
    assert [c.type for c in result.content] == ["text", "image"], result.content
    assert_conforms(schemas, "read_file", result)
    return failed


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_invalid_arguments_are_tool_errors_naming_the_field(
    toolbelt_bin: str, workspace: Path, mode: str
) -> None:
    async with stdio_client(toolbelt_bin, workspace, mode) as client:
        # A word where a line count belongs cannot be repaired.
        result = await client.call_tool("read_file", {"path": "notes.md", "limit": "lots"})
        assert result.is_error is True
        env = envelope(result)
        assert env["status"] == "error"
        assert "INVALID_PARAMS" in text_of(result)
        assert "limit" in text_of(result)

        result = await client.call_tool("read_file", {"path": ""})
        assert result.is_error is True
        assert "path" in text_of(result)

        result = await client.call_tool("edit_file", {"path": "src/main.rs", "old_string": "x"})
        assert result.is_error is True
        assert "new_string" in text_of(result)

        result = await client.call_tool("think", {"thought": "ok", "bogus": 1})
        assert result.is_error is True
        assert "bogus" in text_of(result)

        # The server goes on serving.
        assert_ok(await client.call_tool("think", {"thought": "still here"}), "think")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tool_is_a_protocol_error(toolbelt_bin: str, workspace: Path, mode: str) -> None:
    async with stdio_client(toolbelt_bin, workspace, mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("no_such_tool", {})
        assert "no_such_tool" in caught.value.message
        assert_ok(await client.call_tool("think", {"thought": "still here"}), "think")


# ------------------------------------------------------------ stdio: progress and cancel


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_progress_of_a_long_grep(toolbelt_bin: str, wide_tree: Path, mode: str) -> None:
    updates: list[tuple[float, float | None, str | None]] = []
    enough = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))
        if len(updates) >= 3:
            enough.set()

    async with stdio_client(toolbelt_bin, wide_tree, mode) as client:
        # Three reports are enough; the call is then cancelled rather than awaited.
        async with anyio.create_task_group() as tg:

            async def search() -> None:
                await client.call_tool("grep", SLOW_GREP, progress_callback=on_progress)
                enough.set()

            tg.start_soon(search)
            with anyio.fail_after(60):
                await enough.wait()
            tg.cancel_scope.cancel()
        assert len(updates) >= 3, f"{len(updates)} progress notifications arrived for a long grep"
        progresses = [p for p, _, _ in updates]
        assert progresses == sorted(set(progresses)), f"progress did not grow: {progresses}"
        assert all(message and "grep" in message for _, _, message in updates), updates
        # The server goes on serving.
        assert_ok(await client.call_tool("think", {"thought": "after the progress"}), "think")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_cancel_stops_a_long_grep(toolbelt_bin: str, wide_tree: Path, mode: str) -> None:
    async with stdio_client(toolbelt_bin, wide_tree, mode) as client:
        pids = server_pids(toolbelt_bin)
        assert len(pids) == 1, f"cannot tell the server process among {pids}"
        pid = pids[0]

        # Cancelling the scope sends notifications/cancelled for the call.
        started = time.monotonic()
        with anyio.move_on_after(0.5) as scope:
            await client.call_tool("grep", SLOW_GREP)
        assert scope.cancelled_caught, "the slow grep finished before it could be cancelled"
        assert time.monotonic() - started < 5

        # Give the server a moment to see the notice, then it should sit idle.
        await anyio.sleep(0.3)
        before = cpu_seconds(pid)
        await anyio.sleep(1.0)
        busy = cpu_seconds(pid) - before
        assert busy < 0.3, f"the server used {busy:.2f} s of CPU in the second after the cancel"

        # And it answers the next call.
        assert_ok(await client.call_tool("think", {"thought": "after the cancel"}), "think")


# -------------------------------------------------------------------------------- HTTP


class Served:
    def __init__(self, url: str, base: str, token: str, proc: subprocess.Popen[bytes]) -> None:
        self.url = url
        self.base = base
        self.token = token
        self.proc = proc

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def served(toolbelt_bin: str, workspace: Path, tmp_path: Path) -> Iterator[Served]:
    token = secrets.token_hex(24)
    state = tmp_path / "state"
    state.mkdir()
    argv = [toolbelt_bin, "serve", "--bind", f"127.0.0.1:{free_port()}", f"--token={token}", "--root", str(workspace), "--state-dir", str(state)]
    env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
    with toolbelt_serve(argv, env, tmp_path / "serve.log", token) as (base, proc):
        yield Served(f"{base}/mcp", base, token, proc)
    # Graceful shutdown on SIGTERM, and the token is never logged.
    assert proc.returncode == 0, f"toolbelt serve exited with {proc.returncode} on SIGTERM"
    assert token not in (tmp_path / "serve.log").read_text()


@asynccontextmanager
async def http_client(served: Served, mode: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers=served.auth()) as http:
        transport = streamable_http_client(served.url, http_client=http)
        async with Client(
            transport, mode=mode, read_timeout_seconds=CALL_TIMEOUT_S, elicitation_callback=pick_first
        ) as client:
            yield client


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "toolbelt-tests", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_http_with_token(served: Served, workspace: Path, mode: str) -> None:
    async with http_client(served, mode) as client:
        if mode == "auto":
            assert client.protocol_version == "2026-07-28", (
                f"the 2026-07-28 revision was not negotiated (got {client.protocol_version})"
            )
        listed = await client.list_tools()
        assert {t.name for t in listed.tools} == BUILTINS
        called = await call_every_builtin(client, workspace)
        assert called == BUILTINS

        result = await client.call_tool("read_file", {"path": "notes.md", "limit": "lots"})
        assert result.is_error is True and "limit" in text_of(result)
        with pytest.raises(MCPError):
            await client.call_tool("no_such_tool", {})


def test_http_without_token_is_401(served: Served) -> None:
    answer = httpx.post(served.url, headers=MCP_HEADERS, content=json.dumps(INITIALIZE))
    assert answer.status_code == 401
    assert answer.headers.get("www-authenticate", "").lower().startswith("bearer")
    assert "access-control-allow-origin" not in answer.headers


def test_http_with_a_wrong_token_is_401(served: Served) -> None:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {served.token}x"}
    answer = httpx.post(served.url, headers=headers, content=json.dumps(INITIALIZE))
    assert answer.status_code == 401


def test_http_token_in_the_query_string_is_refused(served: Served) -> None:
    answer = httpx.post(
        f"{served.url}?token={served.token}&access_token={served.token}",
        headers=MCP_HEADERS,
        content=json.dumps(INITIALIZE),
    )
    assert answer.status_code == 401


def test_http_with_the_token_initializes(served: Served) -> None:
    answer = httpx.post(served.url, headers={**MCP_HEADERS, **served.auth()}, content=json.dumps(INITIALIZE))
    assert answer.status_code == 200, answer.text
    assert "access-control-allow-origin" not in answer.headers or answer.headers["access-control-allow-origin"] != "*"


def test_http_foreign_origin_is_403(served: Served) -> None:
    headers = {**MCP_HEADERS, **served.auth(), "Origin": "https://evil.example"}
    answer = httpx.post(served.url, headers=headers, content=json.dumps(INITIALIZE))
    assert answer.status_code == 403
    assert answer.headers.get("access-control-allow-origin") != "*"


def test_http_foreign_host_is_403(served: Served) -> None:
    headers = {**MCP_HEADERS, **served.auth(), "Host": "evil.example"}
    answer = httpx.post(served.url, headers=headers, content=json.dumps(INITIALIZE))
    assert answer.status_code == 403


def test_json_api(served: Served, workspace: Path) -> None:
    with httpx.Client(base_url=served.base, headers=served.auth(), timeout=CALL_TIMEOUT_S) as http:
        assert http.get("/healthz").status_code == 200
        tools = http.get("/v1/tools")
        assert tools.status_code == 200
        for name in BUILTINS:
            assert name in tools.text
        openapi = http.get("/v1/openapi.json")
        assert openapi.status_code == 200
        assert "openapi" in openapi.json()
        answer = http.post("/v1/tools/read_file", json={"path": "notes.md"})
        assert answer.status_code == 200
        env = answer.json()
        assert env["status"] == "success" and "first" in env["text"]
        bad = http.post("/v1/tools/read_file", json={"path": "notes.md", "limit": "lots"})
        assert bad.json()["status"] == "error" and "limit" in bad.json()["text"]
    assert httpx.get(f"{served.base}/v1/tools").status_code == 401
