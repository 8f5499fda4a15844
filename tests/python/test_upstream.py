"""toolbelt as a client of other MCP servers, and as a gateway in front of them.

The other server is upstream_server.py, built on the official MCP Python SDK
(`MCPServer`), run over stdio and over streamable HTTP. toolbelt reaches it through
`toolbelt call`, the agent (the scripted provider as the model), and `toolbelt mcp`,
which the official SDK's client drives here: built-in and upstream tools side by
side, each call under toolbelt's rules, output budget and call log. The person in
the loop answers by the client's elicitation callback.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from serving import binary_from_env, free_port, toolbelt_serve
from test_providers import serve as scripted_model

HERE = Path(__file__).resolve().parent
SERVER = HERE / "upstream_server.py"
SECRET = "hunter2-never-shown-7f3a"
CALL_TIMEOUT_S = 30.0
MODES = ["legacy", "auto"]


@pytest.fixture(scope="module")
def toolbelt_bin() -> str:
    return binary_from_env()


@dataclass
class Workspace:
    root: Path
    state: Path
    marks: Path
    env: dict[str, str]

    def trust(self, toolbelt_bin: str) -> None:
        """The workspace's servers, as they are now, are trusted (as `toolbelt hooks trust` does)."""
        subprocess.run(
            [toolbelt_bin, "--root", str(self.root), "--state-dir", str(self.state), "hooks", "trust", "--yes"],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )

    def run(self, toolbelt_bin: str, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        self.trust(toolbelt_bin)
        proc = subprocess.run(
            [toolbelt_bin, "--root", str(self.root), "--state-dir", str(self.state), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=120,
        )
        if check:
            assert proc.returncode == 0, proc.stderr
        return proc

    def call(self, toolbelt_bin: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        proc = self.run(toolbelt_bin, "call", tool, json.dumps(args), "--json")
        assert proc.stdout, proc.stderr
        return json.loads(proc.stdout)


def make_workspace(tmp_path: Path, servers: str, extra: str = "") -> Workspace:
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    (root / "hello.txt").write_text("hello from the workspace\n")
    marks = tmp_path / "marks"
    (root / "toolbelt.toml").write_text(servers + "\n" + extra)
    config_home = tmp_path / "config"
    config_home.mkdir(parents=True)
    env = dict(os.environ)
    env.update(
        {
            "RUST_LOG": "warn",
            # The user's own config is not read.
            "XDG_CONFIG_HOME": str(config_home),
            "XDG_STATE_HOME": str(tmp_path / "state-home"),
        }
    )
    return Workspace(root=root, state=tmp_path / "state", marks=marks, env=env)


def stdio_entry(name: str, marks: Path, tool_timeout: float = 20) -> str:
    return f"""
[mcp_servers.{name}]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVER))}, "stdio"]
env = {{ UPSTREAM_MARKS = {json.dumps(str(marks))}, UPSTREAM_SECRET = "{SECRET}" }}
tool_timeout = {tool_timeout}
"""


@contextmanager
def http_upstream(tmp_path: Path) -> Iterator[str]:
    """upstream_server.py over streamable HTTP; yields its /mcp URL."""
    port = free_port()
    log = (tmp_path / "upstream-http.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "UPSTREAM_MARKS": str(tmp_path / "http-marks")},
    )
    try:
        deadline = time.monotonic() + 20
        import socket

        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "upstream-http.log").read_text()
                assert time.monotonic() < deadline, "the HTTP upstream did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    marks = tmp_path / "marks"
    return make_workspace(
        tmp_path,
        stdio_entry("up", marks, tool_timeout=2),
        """
[permissions]
deny = ["up__fail"]
ask = ["up__add"]
""",
    )


# ----------------------------------------------------------------- toolbelt call


def test_tools_are_listed_with_their_prefix_over_stdio_and_http(ws: Workspace, tmp_path: Path, toolbelt_bin: str) -> None:
    with http_upstream(tmp_path) as url:
        (ws.root / ".mcp.json").write_text(
            json.dumps({"mcpServers": {"web": {"type": "http", "url": url, "headers": {"X-Trace": "${TRACE_ID:-none}"}}}})
        )
        listed = json.loads(ws.run(toolbelt_bin, "tools", "--json", "--category", "remote", check=True).stdout)
        names = {t["name"] for t in listed}
        for tool in ["echo", "add", "kinds", "hang", "crash", "grow"]:
            assert f"up__{tool}" in names and f"web__{tool}" in names, names
        echo = next(t for t in listed if t["name"] == "up__echo")
        assert echo["summary"] == "Returns the text it is given."
        # Annotations become hints: echo is read-only.
        assert echo["hints"]["read_only"] is True, echo

        over_stdio = ws.call(toolbelt_bin, "up__echo", {"text": "through stdio"})
        over_http = ws.call(toolbelt_bin, "web__echo", {"text": "through http"})
        assert over_stdio["status"] == "success" and over_stdio["text"] == "through stdio"
        assert over_http["status"] == "success" and over_http["text"] == "through http"

        # Every model API's export takes the remote schemas (strict mode, Gemini).
        for fmt in ["openai-strict", "gemini", "anthropic", "mcp"]:
            out = ws.run(toolbelt_bin, "schema", "--format", fmt, "web__add", "up__kinds", check=True).stdout
            assert "web__add" in out and "up__kinds" in out, fmt
    # The secret in the server's environment reached it, and nothing shows it.
    assert ws.call(toolbelt_bin, "up__secret_env", {})["text"] == "set"
    log = ws.run(toolbelt_bin, "log", "--json", check=True).stdout
    assert "up__secret_env" in log and SECRET not in log


def test_every_content_kind_becomes_one_envelope(ws: Workspace, toolbelt_bin: str) -> None:
    env = ws.call(toolbelt_bin, "up__kinds", {})
    assert env["status"] == "success", env
    kinds = [block["type"] for block in env["data"]["content"]]
    assert kinds == ["text", "image", "audio", "resource", "resource", "resource_link"], kinds
    text = env["text"]
    for part in [
        "plain words",
        "[image: image/png",
        "[audio: audio/wav",
        "[resource file:///notes.txt (text/plain)]\nembedded notes",
        "[resource file:///data.bin (application/octet-stream, 300 B); binary, not shown]",
        "[link: big.log <file:///big.log>: the full log]",
    ]:
        assert part in text, (part, text)
    assert env["data"]["image"]["mime_type"] == "image/png"

    structured = ws.call(toolbelt_bin, "up__add", {"a": 2, "b": 40})
    # up__add is under an `ask` rule and nobody can approve here.
    assert structured["error"]["code"] == "ACCESS_DENIED", structured
    assert "needs approval" in structured["error"]["message"]

    failed = ws.call(toolbelt_bin, "up__fail", {"why": "no"})
    assert failed["error"]["code"] == "ACCESS_DENIED" and "denied by the rule `up__fail`" in failed["error"]["message"]

    bad = ws.call(toolbelt_bin, "up__echo", {"txt": "x"})
    assert bad["error"]["code"] == "INVALID_PARAMS" and "did you mean `text`" in bad["text"], bad


def test_a_server_that_cannot_start_is_named(tmp_path: Path, toolbelt_bin: str) -> None:
    ws = make_workspace(
        tmp_path,
        """
[mcp_servers.broken]
command = "/bin/sh"
args = ["-c", "echo 'missing API key' >&2; exit 3"]
""",
    )
    listed = ws.run(toolbelt_bin, "tools", "--json", check=True)
    assert "broken" in listed.stderr and "missing API key" in listed.stderr, listed.stderr
    # The built-in tools are there all the same.
    assert any(t["name"] == "read_file" for t in json.loads(listed.stdout))

    bad = make_workspace(tmp_path / "b", '[mcp_servers.x]\nurl = "ftp://nowhere"\n')
    proc = bad.run(toolbelt_bin, "tools")
    assert proc.returncode == 2 and 'MCP server "x"' in proc.stderr and "http:// or https://" in proc.stderr


# ------------------------------------------------------ the gateway: toolbelt mcp


def gateway(ws: Workspace, toolbelt_bin: str, mode: str, elicit: Any = None) -> Client:
    ws.trust(toolbelt_bin)
    params = StdioServerParameters(
        command=toolbelt_bin,
        args=["--root", str(ws.root), "--state-dir", str(ws.state), "mcp"],
        env=ws.env,
        cwd=str(ws.root),
    )
    return Client(params, mode=mode, read_timeout_seconds=CALL_TIMEOUT_S, elicitation_callback=elicit)


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def names_of(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


@pytest.mark.parametrize("mode", MODES)
def test_gateway_serves_builtin_and_upstream_tools_and_logs_both(ws: Workspace, toolbelt_bin: str, mode: str) -> None:
    async def main() -> None:
        async with gateway(ws, toolbelt_bin, mode) as client:
            names = await names_of(client)
            assert {"read_file", "bash", "up__echo", "up__kinds"} <= names, names
            local = await client.call_tool("read_file", {"path": "hello.txt"})
            assert "hello from the workspace" in text_of(local)
            remote = await client.call_tool("up__echo", {"text": "via the gateway"})
            assert text_of(remote) == "via the gateway" and not remote.is_error
            picture = await client.call_tool("up__picture", {})
            assert any(getattr(c, "type", None) == "image" for c in picture.content)

            # A long remote result is cut to the budget and saved; read_output pages it.
            long = await client.call_tool("up__long_text", {"lines": 4000})
            text = text_of(long)
            assert "output truncated" in text and "read_output(output_id=" in text, text[-400:]
            output_id = text.split("output_id=")[1].split(",")[0].rstrip(")")
            page = await client.call_tool("read_output", {"output_id": output_id, "offset": 2000, "limit": 3})
            assert "line 2000 of the long text" in text_of(page)

    anyio.run(main)
    log = json.loads(ws.run(toolbelt_bin, "log", "--json", check=True).stdout)
    tools = [entry["tool"] for entry in (log if isinstance(log, list) else log["calls"])]
    assert "read_file" in tools and "up__echo" in tools and "up__long_text" in tools, tools


def test_the_gateway_answers_at_once_while_a_slow_server_starts(tmp_path: Path, toolbelt_bin: str) -> None:
    marks = tmp_path / "marks"
    script = f"sleep 3; exec {json.dumps(sys.executable)} {json.dumps(str(SERVER))} stdio"
    ws = make_workspace(
        tmp_path,
        f"""
[mcp_servers.slow]
command = "/bin/sh"
args = ["-c", {json.dumps(script)}]
env = {{ UPSTREAM_MARKS = {json.dumps(str(marks))} }}
""",
    )

    async def main() -> None:
        started = time.monotonic()
        async with gateway(ws, toolbelt_bin, "legacy") as client:
            # The handshake does not wait for the slow server...
            assert time.monotonic() - started < 2.5
            # ...its tools are there at the first tools/list.
            names = await names_of(client)
            assert "slow__echo" in names and "read_file" in names, names
            assert time.monotonic() - started >= 2.5
            echoed = await client.call_tool("slow__echo", {"text": "late but here"})
            assert text_of(echoed) == "late but here"

    anyio.run(main)


def test_a_hung_call_is_cancelled_at_the_timeout(ws: Workspace, toolbelt_bin: str) -> None:
    async def main() -> None:
        async with gateway(ws, toolbelt_bin, "legacy") as client:
            started = time.monotonic()
            result = await client.call_tool("up__hang", {"seconds": 60})
            assert result.is_error and "TIMEOUT" in text_of(result), text_of(result)
            assert time.monotonic() - started < 15
            # The server was told: notifications/cancelled reached it.
            deadline = time.monotonic() + 10
            while not (ws.marks / "cancelled").exists():
                assert time.monotonic() < deadline, "the upstream server never saw the cancellation"
                await anyio.sleep(0.1)
            # And it still answers.
            again = await client.call_tool("up__echo", {"text": "still here"})
            assert text_of(again) == "still here"

    anyio.run(main)


def test_a_killed_server_is_started_again_and_its_error_is_clear(ws: Workspace, toolbelt_bin: str) -> None:
    async def main() -> None:
        async with gateway(ws, toolbelt_bin, "legacy") as client:
            first = await client.call_tool("up__echo", {"text": "one"})
            assert text_of(first) == "one"
            pid = int((ws.marks / "pid").read_text())
            os.kill(pid, signal.SIGKILL)
            await anyio.sleep(0.5)
            down = await client.call_tool("up__echo", {"text": "two"})
            message = text_of(down)
            assert down.is_error and "UNAVAILABLE" in message and "MCP server up" in message, message
            # After the backoff it is started again: a new process answers.
            deadline = time.monotonic() + 15
            while True:
                await anyio.sleep(0.5)
                again = await client.call_tool("up__echo", {"text": "three"})
                if not again.is_error:
                    break
                assert time.monotonic() < deadline, text_of(again)
            assert text_of(again) == "three"
            assert int((ws.marks / "pid").read_text()) != pid
            # A crash during a call fails that call, naming the server.
            crashed = await client.call_tool("up__crash", {})
            assert crashed.is_error and "MCP server up is unavailable" in text_of(crashed)

    anyio.run(main)


def test_list_changed_is_followed(ws: Workspace, toolbelt_bin: str) -> None:
    async def main() -> None:
        async with gateway(ws, toolbelt_bin, "legacy") as client:
            assert "up__late" not in await names_of(client)
            grown = await client.call_tool("up__grow", {})
            assert text_of(grown) == "grown"
            deadline = time.monotonic() + 10
            while "up__late" not in await names_of(client):
                assert time.monotonic() < deadline, "up__late never appeared"
                await anyio.sleep(0.2)
            late = await client.call_tool("up__late", {})
            assert text_of(late) == "late and here"

    anyio.run(main)


def test_upstream_resources_are_listed_and_read_through_mcp_resource(ws: Workspace, toolbelt_bin: str) -> None:
    listed = ws.call(toolbelt_bin, "mcp_resource", {"action": "list"})
    assert listed["status"] == "success", listed
    assert "up: notes://readme — readme (text/markdown): What the project is" in listed["text"], listed["text"]
    read = ws.call(toolbelt_bin, "mcp_resource", {"action": "read", "server": "up", "uri": "notes://readme"})
    assert "# The project\nIt counts words." in read["text"], read
    missing = ws.call(toolbelt_bin, "mcp_resource", {"action": "read", "server": "up", "uri": "notes://nothing"})
    assert missing["error"]["code"] == "REMOTE_ERROR", missing


def test_the_gateway_serves_the_upstream_prompts(ws: Workspace, toolbelt_bin: str) -> None:
    async def main() -> None:
        async with gateway(ws, toolbelt_bin, "legacy") as client:
            prompts = {p.name: p for p in (await client.list_prompts()).prompts}
            assert "up__review" in prompts, prompts
            assert prompts["up__review"].description == "Ask for a review of one topic"
            got = await client.get_prompt("up__review", {"topic": "the parser"})
            assert got.messages[0].content.text == "Please review the parser carefully."

    anyio.run(main)


def test_serve_offers_the_upstream_tools_to_the_json_api_and_mcp(ws: Workspace, tmp_path: Path, toolbelt_bin: str) -> None:
    import secrets
    import urllib.request

    token = secrets.token_hex(16)
    ws.trust(toolbelt_bin)
    argv = [
        toolbelt_bin, "--root", str(ws.root), "--state-dir", str(ws.state),
        "serve", "--bind", f"127.0.0.1:{free_port()}", f"--token={token}",
    ]
    with toolbelt_serve(argv, ws.env, tmp_path / "serve.log", token) as (base, _proc):
        headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        with urllib.request.urlopen(urllib.request.Request(f"{base}/v1/tools", headers=headers), timeout=30) as r:
            listed = r.read().decode()
        assert "up__echo" in listed and "read_file" in listed
        call = urllib.request.Request(
            f"{base}/v1/tools/up__echo", data=json.dumps({"text": "over the JSON API"}).encode(), headers=headers
        )
        with urllib.request.urlopen(call, timeout=30) as r:
            env = json.load(r)
        assert env["status"] == "success" and env["text"] == "over the JSON API", env


# ------------------------------------------------------- the person in the loop


QUESTIONS = {
    "questions": [
        {
            "header": "Database",
            "question": "Which database should the service use?",
            "options": [
                {"label": "PostgreSQL", "description": "a server, for many writers"},
                {"label": "SQLite", "description": "a file, for one writer"},
            ],
        },
        {
            "header": "Targets",
            "question": "Which platforms must it run on?",
            "options": [{"label": "Linux"}, {"label": "macOS"}, {"label": "Windows"}],
            "multi_select": True,
        },
    ]
}


@pytest.mark.parametrize("mode", MODES)
def test_ask_user_goes_to_the_clients_user(ws: Workspace, toolbelt_bin: str, mode: str) -> None:
    forms: list[types.ElicitRequestParams] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        forms.append(params)
        if len(forms) == 1:
            return types.ElicitResult(
                action="accept", content={"q1": "SQLite", "q2": ["Linux", "macOS"], "q2_text": "and a Raspberry Pi"}
            )
        return types.ElicitResult(action="decline")

    async def main() -> None:
        async with gateway(ws, toolbelt_bin, mode, answer) as client:
            answered = await client.call_tool("ask_user", QUESTIONS)
            text = text_of(answered)
            assert not answered.is_error, text
            assert "- Database: SQLite" in text and "- Targets: Linux, macOS" in text, text
            assert "Raspberry Pi" in text
            schema = forms[0].requested_schema
            assert schema["properties"]["q1"]["oneOf"][0]["const"] == "PostgreSQL"
            assert schema["properties"]["q2"]["type"] == "array"

            declined = await client.call_tool("ask_user", QUESTIONS)
            assert "The user declined to answer" in text_of(declined)

    anyio.run(main)


def test_ask_user_without_elicitation_tells_the_model_to_ask_in_its_reply(ws: Workspace, toolbelt_bin: str) -> None:
    async def main() -> None:
        async with gateway(ws, toolbelt_bin, "legacy") as client:
            result = await client.call_tool("ask_user", QUESTIONS)
            assert result.is_error and "ask your questions in your reply" in text_of(result), text_of(result)

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_an_ask_rule_is_answered_by_elicitation(ws: Workspace, toolbelt_bin: str, mode: str) -> None:
    answers = iter(
        [
            {"decision": "accept"},
            {"decision": "decline", "reason": "use the calculator instead"},
            {"decision": "always"},
        ]
    )
    messages: list[str] = []

    async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        messages.append(params.message)
        return types.ElicitResult(action="accept", content=next(answers))

    async def main() -> None:
        async with gateway(ws, toolbelt_bin, mode, answer) as client:
            accepted = await client.call_tool("up__add", {"a": 2, "b": 3})
            assert not accepted.is_error and '"sum": 5' in text_of(accepted), text_of(accepted)
            assert "up__add" in messages[0] and "`up__add`" in messages[0]

            declined = await client.call_tool("up__add", {"a": 1, "b": 1})
            text = text_of(declined)
            assert declined.is_error and "use the calculator instead" in text, text

            always = await client.call_tool("up__add", {"a": 4, "b": 4})
            assert '"sum": 8' in text_of(always)
            # "Always" holds for the session: no further question.
            again = await client.call_tool("up__add", {"a": 4, "b": 4})
            assert '"sum": 8' in text_of(again)
            assert len(messages) == 3, messages
            # Deny rules are never put to the user.
            denied = await client.call_tool("up__fail", {"why": "x"})
            assert denied.is_error and "denied" in text_of(denied)
            assert len(messages) == 3

    anyio.run(main)
    # One record per call the client made: a call put off to the next round (the
    # 2026-07-28 flow) is not recorded twice.
    log = json.loads(ws.run(toolbelt_bin, "log", "--json", check=True).stdout)
    entries = [e for e in (log if isinstance(log, list) else log["calls"]) if e["tool"] == "up__add"]
    assert len(entries) == 4, entries


# --------------------------------------------------------------------- the agent


def test_the_agent_calls_a_remote_tool(ws: Workspace, tmp_path: Path, toolbelt_bin: str) -> None:
    script = {
        "kind": "openai",
        "replies": [
            {"tool_calls": [{"name": "up__echo", "arguments": json.dumps({"text": "remote says hi"})}]},
            {"text": "The server said hi."},
        ],
    }
    with scripted_model(tmp_path, script) as model:
        proc = ws.run(
            toolbelt_bin,
            "agent",
            "--base-url",
            model.base_url,
            "--model",
            "scripted",
            "-p",
            "Ask the upstream server to say hi.",
        )
        assert proc.returncode == 0, proc.stderr
        assert "The server said hi." in proc.stdout
        requests = model.requests()
        first_tools = {t["function"]["name"] for t in requests[0]["body"]["tools"]}
        assert "up__echo" in first_tools and "read_file" in first_tools
        last = json.dumps(requests[-1]["body"]["messages"])
        assert "remote says hi" in last


@pytest.mark.parametrize("mode", ["legacy"])
def test_a_hook_guards_an_upstream_tool_through_the_gateway(ws: Workspace, toolbelt_bin: str, mode: str) -> None:
    """A person's hook (their own config) blocks another server's tool served through
    toolbelt, before the call reaches that server."""
    user = Path(ws.env["XDG_CONFIG_HOME"]) / "toolbelt"
    user.mkdir(parents=True, exist_ok=True)
    (user / "toolbelt.toml").write_text(
        """
[[hooks.pre_tool_use]]
name = "no-upstream-touch"
match = "up__touch"
command = "echo 'no touching upstream' >&2; exit 2"
"""
    )

    async def main() -> None:
        async with gateway(ws, toolbelt_bin, mode) as client:
            refused = await client.call_tool("up__touch", {"name": "marker"})
            assert refused.is_error, text_of(refused)
            assert "hook 'no-upstream-touch'" in text_of(refused) and "no touching upstream" in text_of(refused)
            fine = await client.call_tool("up__echo", {"text": "still served"})
            assert not fine.is_error and "still served" in text_of(fine)

    anyio.run(main)
    assert not (ws.marks / "marker").exists()

