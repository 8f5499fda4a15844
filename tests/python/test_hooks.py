"""Hooks from the outside (docs/hooks.md), through the official MCP Python SDK client
over stdio (`toolbelt mcp`) and streamable HTTP (`toolbelt serve`): a hook blocks a
call whatever the front end, an `ask` from a hook is an elicitation, Claude Code's
own example hook script works unchanged under the claude profile, and a workspace's
hooks and MCP servers run only once trusted.

The binary under test comes from the environment: TOOLBELT_BIN=/path/to/toolbelt.
Run through tests/python/run.sh, which creates the virtual environment first.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from serving import binary_from_env, free_port, toolbelt_serve
from test_checkpoints import Approvals

MODES = ["legacy", "auto"]
CALL_TIMEOUT_S = 120.0
HERE = Path(__file__).resolve().parent

NO_TOUCH = """
[[hooks.pre_tool_use]]
name = "no-touch"
if = "bash(touch:*)"
command = "echo 'no touching' >&2; exit 2"
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def toolbelt_bin() -> str:
    return binary_from_env()


class Place:
    """A workspace, a state directory outside it, and the user's own configuration
    directory (XDG_CONFIG_HOME), all under the test's temporary directory."""

    def __init__(self, tmp_path: Path, user_hooks: str = "") -> None:
        self.root = tmp_path / "ws"
        self.root.mkdir()
        self.state = tmp_path / "state"
        self.config = tmp_path / "config"
        (self.config / "toolbelt").mkdir(parents=True)
        if user_hooks:
            (self.config / "toolbelt" / "toolbelt.toml").write_text(user_hooks)
        self.env = {
            **os.environ,
            "RUST_LOG": "warn",
            "XDG_CONFIG_HOME": str(self.config),
            "XDG_STATE_HOME": str(tmp_path / "state-home"),
        }

    def argv(self, *args: str, profile: str | None = None) -> list[str]:
        front = ["--profile", profile] if profile else []
        return [*front, "--root", str(self.root), "--state-dir", str(self.state), *args]

    def run(self, toolbelt_bin: str, *args: str, profile: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [toolbelt_bin, *self.argv(*args, profile=profile)],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.root,
            timeout=CALL_TIMEOUT_S,
        )

    def stdio(self, toolbelt_bin: str, mode: str, profile: str | None = None, **kwargs: Any) -> Client:
        params = StdioServerParameters(command=toolbelt_bin, args=self.argv("mcp", profile=profile), env=self.env, cwd=str(self.root))
        return Client(params, mode=mode, read_timeout_seconds=CALL_TIMEOUT_S, **kwargs)


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def denied_by(result: Any, hook: str, reason: str) -> None:
    text = text_of(result)
    assert result.is_error, text
    assert f"hook '{hook}'" in text and reason in text, text
    env = result.structured_content
    assert env["error"]["code"] == "ACCESS_DENIED", env
    assert env["data"]["hook"] == hook, env


@asynccontextmanager
async def http_client(url: str, token: str, mode: str) -> AsyncIterator[Client]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            yield client


@pytest.fixture
def served(toolbelt_bin: str, tmp_path: Path) -> Iterator[tuple[Place, str, str]]:
    place = Place(tmp_path, NO_TOUCH)
    token = secrets.token_hex(24)
    argv = [toolbelt_bin, *place.argv("serve", "--bind", f"127.0.0.1:{free_port()}", f"--token={token}")]
    with toolbelt_serve(argv, place.env, tmp_path / "serve.log", token) as (base, _proc):
        yield place, f"{base}/mcp", token


# ------------------------------------------------------------------ one hook, every front end


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_hook_blocks_a_call_over_mcp_stdio(toolbelt_bin: str, tmp_path: Path, mode: str) -> None:
    place = Place(tmp_path, NO_TOUCH)
    async with place.stdio(toolbelt_bin, mode) as client:
        denied_by(await client.call_tool("bash", {"command": "touch marker"}), "no-touch", "no touching")
        # The same hook inside a compound line: the command is parsed, not matched as text.
        denied_by(await client.call_tool("bash", {"command": "echo hi && touch marker"}), "no-touch", "no touching")
        fine = await client.call_tool("bash", {"command": "echo fine"})
        assert not fine.is_error and "fine" in text_of(fine)
        assert fine.structured_content["context"].get("hooks") is None, fine.structured_content
    assert not (place.root / "marker").exists()


@pytest.mark.anyio
async def test_a_hook_blocks_a_call_over_mcp_http_and_the_json_api(served: tuple[Place, str, str]) -> None:
    import urllib.error
    import urllib.request

    place, url, token = served
    for mode in MODES:
        async with http_client(url, token, mode) as client:
            denied_by(await client.call_tool("bash", {"command": "touch marker"}), "no-touch", "no touching")
    request = urllib.request.Request(
        url.removesuffix("/mcp") + "/v1/tools/bash",
        data=json.dumps({"command": "touch marker"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as r:
            env = json.loads(r.read())
    except urllib.error.HTTPError as e:
        env = json.loads(e.read())
    assert env["error"]["code"] == "ACCESS_DENIED" and env["data"]["hook"] == "no-touch", env
    assert not (place.root / "marker").exists()


# ---------------------------------------------------------------------------- ask, as an elicitation


class Declines:
    """The client's user, who says no."""

    def __init__(self) -> None:
        self.forms: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> Any:
        self.forms.append(params)
        return mcp_types.ElicitResult(action="decline")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_ask_from_a_hook_is_an_elicitation(toolbelt_bin: str, tmp_path: Path, mode: str) -> None:
    place = Place(
        tmp_path,
        """
[[hooks.pre_tool_use]]
name = "ask-touch"
if = "bash(touch:*)"
command = '''echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"touching needs a yes"}}' '''
""",
    )
    approvals = Approvals()
    async with place.stdio(toolbelt_bin, mode, elicitation_callback=approvals) as client:
        done = await client.call_tool("bash", {"command": "touch yes"})
        assert not done.is_error, text_of(done)
    assert len(approvals.forms) == 1 and "touch yes" in approvals.forms[0].message, approvals.forms
    assert (place.root / "yes").exists()

    declines = Declines()
    async with place.stdio(toolbelt_bin, mode, elicitation_callback=declines) as client:
        refused = await client.call_tool("bash", {"command": "touch no"})
    assert refused.is_error and "declined" in text_of(refused), text_of(refused)
    assert refused.structured_content["error"]["code"] == "ACCESS_DENIED"
    assert len(declines.forms) == 1
    assert not (place.root / "no").exists()


# ------------------------------------------------------------------- Claude Code's own example


@pytest.mark.anyio
async def test_claude_codes_block_rm_script_works_unchanged(toolbelt_bin: str, tmp_path: Path) -> None:
    script = HERE / "fixtures" / "block-rm.sh"
    place = Place(
        tmp_path,
        f"""
[[hooks.pre_tool_use]]
match = "Bash"
dialect = "claude"
command = {json.dumps(str(script))}
""",
    )
    (place.root / "x").mkdir()
    async with place.stdio(toolbelt_bin, "legacy", profile="claude") as client:
        refused = await client.call_tool("Bash", {"command": "rm -rf x"})
        assert refused.is_error and "Destructive command blocked by hook" in text_of(refused), text_of(refused)
        fine = await client.call_tool("Bash", {"command": "ls"})
        assert not fine.is_error and "x" in text_of(fine), text_of(fine)
    assert (place.root / "x").is_dir()
    # The command line, under the same profile.
    called = place.run(toolbelt_bin, "call", "Bash", json.dumps({"command": "rm -rf x"}), "--json", profile="claude")
    assert called.returncode == 1, called.stderr
    assert "Destructive command blocked by hook" in json.loads(called.stdout)["text"]
    assert (place.root / "x").is_dir()


# ------------------------------------------------------------------------------------- trust


@pytest.mark.anyio
async def test_a_workspaces_hooks_and_servers_run_only_once_trusted(toolbelt_bin: str, tmp_path: Path) -> None:
    place = Place(tmp_path)
    hooks = place.root / ".toolbelt" / "hooks"
    hooks.mkdir(parents=True)
    mark = hooks / "mark.sh"
    mark.write_text('#!/bin/sh\ntouch "$TOOLBELT_PROJECT_DIR/hook-ran"\n')
    mark.chmod(0o755)
    (place.root / "toolbelt.toml").write_text(
        """
[[hooks.pre_tool_use]]
name = "mark"
match = "bash"
command = ".toolbelt/hooks/mark.sh"

[[hooks.pre_tool_use]]
name = "guard"
match = "edit_file"
required = true
deny = "never"
"""
    )
    server_mark = tmp_path / "server-started"
    (place.root / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"cloned": {"command": "sh", "args": ["-c", f"touch {server_mark}; sleep 30"]}}})
    )

    # Untrusted: `toolbelt mcp` starts, says so once, and runs neither.
    mcp = subprocess.run([toolbelt_bin, *place.argv("mcp")], input="", capture_output=True, text=True, env=place.env, timeout=60)
    warnings = [line for line in mcp.stderr.splitlines() if "not trusted" in line]
    assert len(warnings) == 1 and "mark" in warnings[0] and "cloned" in warnings[0], mcp.stderr
    async with place.stdio(toolbelt_bin, "legacy") as client:
        ran = await client.call_tool("bash", {"command": "echo hi"})
        assert not ran.is_error, text_of(ran)
        assert [h["outcome"] for h in ran.structured_content["context"]["hooks"]] == ["untrusted"]
        # A required hook that is not trusted denies what it would match, with the hint.
        guarded = await client.call_tool("edit_file", {"path": "a.txt", "old_string": "a", "new_string": "b"})
        assert guarded.is_error and "toolbelt hooks trust" in text_of(guarded), text_of(guarded)
    assert not (place.root / "hook-ran").exists()
    assert not server_mark.exists()

    # Trusted: both run.
    trusted = place.run(toolbelt_bin, "hooks", "trust", "--yes")
    assert trusted.returncode == 0, trusted.stderr
    async with place.stdio(toolbelt_bin, "legacy") as client:
        ran = await client.call_tool("bash", {"command": "echo hi"})
        assert not ran.is_error, text_of(ran)
        tools = {t.name for t in (await client.list_tools()).tools}
    assert (place.root / "hook-ran").exists()
    assert server_mark.exists(), tools

    # A shell line that names the script as a target is refused...
    refused = place.run(toolbelt_bin, "call", "bash", json.dumps({"command": "echo '#' >> .toolbelt/hooks/mark.sh"}), "--json")
    assert json.loads(refused.stdout)["error"]["code"] == "ACCESS_DENIED", refused.stdout
    # ...and one byte more through a write the line does not show (no sandbox): the
    # call that did it is told, and the hook stops until trusted again.
    (place.root / "hook-ran").unlink()
    sneaky = "python3 -c \"open('.toolbelt/hooks/mark.sh', 'a').write('#')\""
    changed = place.run(toolbelt_bin, "call", "bash", json.dumps({"command": sneaky}), "--json")
    assert "changed the workspace's hooks (.toolbelt/hooks/mark.sh)" in json.loads(changed.stdout)["text"], changed.stdout
    (place.root / "hook-ran").unlink()
    called = place.run(toolbelt_bin, "call", "bash", json.dumps({"command": "echo hi"}), "--json")
    assert called.returncode == 0, called.stderr
    assert [h["outcome"] for h in json.loads(called.stdout)["context"]["hooks"]][0] == "untrusted"
    assert not (place.root / "hook-ran").exists()

    # Trusted again, then one character more in its definition: it stops again.
    assert place.run(toolbelt_bin, "hooks", "trust", "--yes").returncode == 0
    called = place.run(toolbelt_bin, "call", "bash", json.dumps({"command": "echo hi"}), "--json")
    assert [h["outcome"] for h in json.loads(called.stdout)["context"]["hooks"]][0] == "ok", called.stdout
    config = place.root / "toolbelt.toml"
    config.write_text(config.read_text().replace('match = "bash"', 'match = "bash*"'))
    called = place.run(toolbelt_bin, "call", "bash", json.dumps({"command": "echo hi"}), "--json")
    assert [h["outcome"] for h in json.loads(called.stdout)["context"]["hooks"]][0] == "untrusted", called.stdout

    # The agent's file tools may not rewrite the rules or the hooks.
    for tool, args in [
        ("write_file", {"path": "toolbelt.toml", "content": "", "overwrite": True}),
        ("write_file", {"path": ".toolbelt/hooks/mark.sh", "content": "#!/bin/sh\n", "overwrite": True}),
    ]:
        refused = place.run(toolbelt_bin, "call", tool, json.dumps(args), "--json")
        env = json.loads(refused.stdout)
        assert env["error"]["code"] == "ACCESS_DENIED", env
    assert "mark.sh" in (place.root / "toolbelt.toml").read_text()
