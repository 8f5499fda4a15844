"""Checkpoints and rewind from the outside (docs/checkpoints.md): the official MCP
Python SDK client over stdio (`toolbelt mcp`) and streamable HTTP (`toolbelt serve`),
the JSON API, and `toolbelt checkpoints` on the same root and state directory.

Each call that changed files names its checkpoint in `context.checkpoint`; the records
keep where the call came from (`mcp` with the client's name, `mcp-http` with the MCP
session too, `api`); a rewind over MCP is asked of the client's user by elicitation
and refused, with the CLI command to run, when the client cannot be asked; a restore
over the JSON API is a dry run unless the body says otherwise.

The binary under test comes from the environment: TOOLBELT_BIN=/path/to/toolbelt.
Run through tests/python/run.sh, which creates the virtual environment first.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import mcp_types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import DEFAULT_CLIENT_INFO
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from serving import binary_from_env, free_port, toolbelt_serve

# "legacy" speaks the initialize handshake (an approval is an elicitation/create request
# to the client); "auto" uses the 2026-07-28 revision (the call answers input_required
# with the form, and the SDK calls again with the answer).
MODES = ["legacy", "auto"]

CALL_TIMEOUT_S = 120.0

# The name the SDK gives the server in clientInfo (it also makes toolbelt send
# structuredContent, which these tests read).
CLIENT_NAME = DEFAULT_CLIENT_INFO.name

MAIN_RS = 'fn main() {\n    println!("hello");\n}\n'
NOTES_MD = "# Notes\n\nfirst\nsecond\n"


# ---------------------------------------------------------------------------- fixtures


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def toolbelt_bin() -> str:
    return binary_from_env()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "main.rs").write_text(MAIN_RS)
    (root / "src" / "lib.rs").write_text("pub fn answer() -> u32 {\n    41\n}\n")
    (root / "notes.md").write_text(NOTES_MD)
    return root


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    """The state directory, outside the workspace: the store and the kept content."""
    state = tmp_path / "state"
    state.mkdir()
    return state


def server_env(tmp_path: Path) -> dict[str, str]:
    # XDG_STATE_HOME too, so that nothing lands in the user's own state even if
    # --state-dir were ignored somewhere.
    return {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn"), "XDG_STATE_HOME": str(tmp_path / "xdg")}


# ----------------------------------------------------------------------------- helpers


def hashes(root: Path) -> dict[str, str]:
    """Every file under `root` (relative path -> SHA-256 of its bytes); directories by
    a marker, so that one made or removed shows too."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            found[rel + "/"] = "dir"
        else:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def ok(result: Any, tool: str) -> dict[str, Any]:
    """The envelope of a successful call."""
    env = result.structured_content
    assert isinstance(env, dict), f"{tool}: structuredContent is not the envelope: {result!r}"
    assert not result.is_error, f"{tool} failed: {text_of(result)}"
    assert env["status"] == "success", f"{tool}: {env}"
    return env


def toolbelt(toolbelt_bin: str, root: Path, state: Path, env: dict[str, str], *args: str) -> Any:
    """`toolbelt --root R --state-dir S ARGS... --json`, its JSON output."""
    done = subprocess.run(
        [toolbelt_bin, "--root", str(root), "--state-dir", str(state), *args, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=CALL_TIMEOUT_S,
    )
    assert done.returncode == 0, f"toolbelt {' '.join(args)} exited {done.returncode}: {done.stderr}"
    return json.loads(done.stdout)


def stdio_client(toolbelt_bin: str, root: Path, state: Path, env: dict[str, str], mode: str, **kwargs: Any) -> Client:
    params = StdioServerParameters(
        command=toolbelt_bin,
        args=["mcp", "--root", str(root), "--state-dir", str(state)],
        env=env,
        cwd=str(root),
    )
    return Client(params, mode=mode, read_timeout_seconds=CALL_TIMEOUT_S, **kwargs)


class Approvals:
    """The client's user: answers each approval form with its "Allow once" option,
    and keeps the forms it was shown."""

    def __init__(self) -> None:
        self.forms: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        self.forms.append(params)
        options = params.requested_schema["properties"]["decision"]["oneOf"]
        once = [o["const"] for o in options if o.get("title") == "Allow once"]
        assert len(once) == 1, f"no single 'Allow once' option in the approval form: {options}"
        return mcp_types.ElicitResult(action="accept", content={"decision": once[0]})


# ------------------------------------------------------------------------------- stdio


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_checkpoints_over_stdio_and_a_rewind_asked_by_elicitation(
    toolbelt_bin: str, workspace: Path, state_dir: Path, tmp_path: Path, mode: str
) -> None:
    env = server_env(tmp_path)
    before = hashes(workspace)
    approvals = Approvals()

    async with stdio_client(toolbelt_bin, workspace, state_dir, env, mode, elicitation_callback=approvals) as client:
        # A new file, then an edit of an existing one (read first: the optimistic lock).
        written = ok(await client.call_tool("write_file", {"path": "docs/guide.md", "content": "# Guide\n", "create_dirs": True}), "write_file")
        ok(await client.call_tool("read_file", {"path": "src/main.rs"}), "read_file")
        edited = ok(await client.call_tool("edit_file", {"path": "src/main.rs", "old_string": "hello", "new_string": "world"}), "edit_file")
        first, second = written["context"].get("checkpoint"), edited["context"].get("checkpoint")
        assert first and second and first != second, (written["context"], edited["context"])
        assert (workspace / "docs" / "guide.md").read_text() == "# Guide\n"
        assert (workspace / "src" / "main.rs").read_text() == MAIN_RS.replace("hello", "world")
        # A call that only reads takes none.
        read = ok(await client.call_tool("read_file", {"path": "notes.md"}), "read_file")
        assert "checkpoint" not in read["context"], read["context"]

        # The CLI on the same root and state sees both, from this MCP client.
        listed = await anyio.to_thread.run_sync(lambda: toolbelt(toolbelt_bin, workspace, state_dir, env, "checkpoints", "list"))
        by_id = {c["id"]: c for c in listed}
        assert set(by_id) == {first, second}, listed
        for cp, tool in [(first, "write_file"), (second, "edit_file")]:
            assert by_id[cp]["tool"] == tool, by_id[cp]
            assert by_id[cp]["origin"]["front_end"] == "mcp", by_id[cp]
            assert by_id[cp]["origin"]["client"] == CLIENT_NAME, by_id[cp]
            assert by_id[cp]["call_id"] == (written if cp == first else edited)["context"]["call_id"]
        shown = await anyio.to_thread.run_sync(lambda: toolbelt(toolbelt_bin, workspace, state_dir, env, "checkpoints", "show", second))
        [main_rs] = [p for p in shown["paths"] if p["path"] == "src/main.rs"]
        assert main_rs["change"] == "modified" and main_rs["captured"] is True, main_rs
        assert main_rs["before"]["hash"] == sha256(MAIN_RS), main_rs
        assert main_rs["after"]["hash"] == sha256(MAIN_RS.replace("hello", "world")), main_rs

        # The rewind to the first is asked; the user allows it once.
        rewound = ok(await client.call_tool("rewind", {"checkpoint": first}), "rewind")
        assert len(approvals.forms) == 1, approvals.forms
        assert first in approvals.forms[0].message, approvals.forms[0].message
        data = rewound["data"]
        assert data["dry_run"] is False and data["to"] == first, data
        assert data["undoes"] == [first, second], data
        assert {p["path"]: p["action"] for p in data["paths"]} == {"docs": "remove", "docs/guide.md": "remove", "src/main.rs": "restore"}, data
        own = data["checkpoint"]
        assert own and own not in (first, second), data
    assert hashes(workspace) == before
    assert not (workspace / "docs" / "guide.md").exists()

    listed = toolbelt(toolbelt_bin, workspace, state_dir, env, "checkpoints", "list")
    assert [c["id"] for c in listed] == [own, second, first], listed
    assert listed[0]["tool"] == "rewind" and listed[0]["rewind_of"] == first, listed[0]

    # A client that cannot be asked: the rewind (back to before the rewind, which
    # would bring both changes back) is refused, naming the command the user can run.
    async with stdio_client(toolbelt_bin, workspace, state_dir, env, mode) as client:
        refused = await client.call_tool("rewind", {"checkpoint": own})
        assert refused.is_error is True, text_of(refused)
        assert f"toolbelt rewind {own}" in text_of(refused), text_of(refused)
        assert refused.structured_content["error"]["code"] == "ACCESS_DENIED", refused.structured_content
    assert hashes(workspace) == before
    assert [c["id"] for c in toolbelt(toolbelt_bin, workspace, state_dir, env, "checkpoints", "list")] == [own, second, first]


# -------------------------------------------------------------------------------- HTTP


class Served:
    def __init__(self, url: str, base: str, token: str) -> None:
        self.url = url
        self.base = base
        self.token = token

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def served(toolbelt_bin: str, workspace: Path, state_dir: Path, tmp_path: Path) -> Iterator[Served]:
    token = secrets.token_hex(24)
    argv = [toolbelt_bin, "serve", "--bind", f"127.0.0.1:{free_port()}", f"--token={token}", "--root", str(workspace), "--state-dir", str(state_dir)]
    with toolbelt_serve(argv, server_env(tmp_path), tmp_path / "serve.log", token) as (base, proc):
        yield Served(f"{base}/mcp", base, token)
    assert proc.returncode == 0, f"toolbelt serve exited with {proc.returncode} on SIGTERM"
    assert token not in (tmp_path / "serve.log").read_text()


@asynccontextmanager
async def http_client(served: Served, mode: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers=served.auth()) as http:
        transport = streamable_http_client(served.url, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            yield client


@pytest.mark.anyio
async def test_checkpoints_over_http_and_the_api_and_a_restore(served: Served, workspace: Path) -> None:
    before = hashes(workspace)

    # The edit through MCP over HTTP, with the handshake (so with a session)...
    async with http_client(served, "legacy") as client:
        ok(await client.call_tool("read_file", {"path": "src/main.rs"}), "read_file")
        edited = ok(await client.call_tool("edit_file", {"path": "src/main.rs", "old_string": "hello", "new_string": "world"}), "edit_file")
    over_mcp = edited["context"].get("checkpoint")
    # ...a new file through the 2026-07-28 revision (the client's name in each request's _meta)...
    async with http_client(served, "auto") as client:
        written = ok(await client.call_tool("write_file", {"path": "docs/guide.md", "content": "# Guide\n", "create_dirs": True}), "write_file")
    over_modern = written["context"].get("checkpoint")

    with httpx.Client(base_url=served.base, headers=served.auth(), timeout=CALL_TIMEOUT_S) as http:
        # ...and an edit through the JSON API.
        assert http.post("/v1/tools/read_file", json={"path": "notes.md"}).json()["status"] == "success"
        answer = http.post("/v1/tools/edit_file", json={"path": "notes.md", "old_string": "second", "new_string": "second, edited"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["status"] == "success", answer.text
        over_api = answer.json()["context"].get("checkpoint")
        assert over_mcp and over_modern and over_api and len({over_mcp, over_modern, over_api}) == 3

        def record(cp: str) -> dict[str, Any]:
            got = http.get(f"/v1/checkpoints/{cp}")
            assert got.status_code == 200, got.text
            return got.json()

        origin = record(over_mcp)["origin"]
        assert origin["front_end"] == "mcp-http", origin
        assert origin["client"] == CLIENT_NAME, origin
        assert origin.get("session"), f"no MCP session in the origin: {origin}"
        origin = record(over_modern)["origin"]
        assert origin["front_end"] == "mcp-http" and origin["client"] == CLIENT_NAME, origin
        api = record(over_api)
        assert api["origin"]["front_end"] == "api" and api["tool"] == "edit_file", api
        assert [f["path"] for f in api["files"]] == ["notes.md"], api["files"]

        listed = http.get("/v1/checkpoints").json()["checkpoints"]
        assert [c["id"] for c in listed] == [over_api, over_modern, over_mcp], listed
        changed = hashes(workspace)
        assert changed != before

        # A restore with an empty object is a dry run: the plan, and nothing changed.
        dry = http.post(f"/v1/checkpoints/{over_mcp}/restore", json={})
        assert dry.status_code == 200, dry.text
        plan = dry.json()
        assert plan["dry_run"] is True and plan["checkpoint"] is None and plan["restored"] == 4, plan
        assert plan["plan"]["undoes"] == [over_mcp, over_modern, over_api], plan
        assert {i["path"]: i["action"] for i in plan["plan"]["items"]} == {
            "src/main.rs": "restore",
            "docs": "remove",
            "docs/guide.md": "remove",
            "notes.md": "restore",
        }, plan["plan"]["items"]
        assert hashes(workspace) == changed
        assert [c["id"] for c in http.get("/v1/checkpoints").json()["checkpoints"]] == [over_api, over_modern, over_mcp]

        # For real: every file as it was before the first edit.
        done = http.post(f"/v1/checkpoints/{over_mcp}/restore", json={"dry_run": False})
        assert done.status_code == 200, done.text
        outcome = done.json()
        assert outcome["dry_run"] is False and outcome["restored"] == len(plan["plan"]["items"]) == 4, outcome
        assert outcome["skipped"] == [], outcome
        assert hashes(workspace) == before
        assert not (workspace / "docs" / "guide.md").exists()
        # The restore kept a checkpoint of its own, from the API: restoring it undoes it.
        own = outcome["checkpoint"]
        assert own, outcome
        kept = record(own)
        assert kept["rewind_of"] == over_mcp and kept["origin"]["front_end"] == "api", kept
