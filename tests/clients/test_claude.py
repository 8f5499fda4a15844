"""Claude Code (the pinned @anthropic-ai/claude-code) drives toolbelt, stdio and HTTP,
configured with the README's `claude mcp add` lines, in print mode (`claude -p`),
with the scripted model behind ANTHROPIC_BASE_URL; and the Anthropic wire module is
read back with the official `anthropic` Python SDK.

What Claude Code does with an MCP result (2.1.197, bundled source): the tool is named
`mcp__<server>__<tool>`; `structuredContent`, when present, replaces the text blocks
(the model gets its JSON, after any image blocks); an `isError` result reaches the
model as one string, its text blocks joined by newlines, with `is_error: true`.
A result estimated (characters / 4, 1,600 an image) above half of MAX_MCP_OUTPUT_TOKENS
(25,000) is counted with `count_tokens`; above the limit it is saved to a file and the
model is told where (with an image in it: cut to the first 100,000 characters).
Tool descriptions over 2,048 characters are cut there, with "… [truncated]".
In print mode, with nonessential traffic off, Claude Code sends no side requests; it
only sends `HEAD /` to the base URL to warm the connection (any answer will do).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import pytest

from conftest import Clients, Served, check_standard, fill, readme_block, standard_steps, run_group
from model import ScriptedModel, call, say

CLIENT = "claude-code"
RUN_TIMEOUT_S = 120
SETUP_TIMEOUT_S = 60
PROMPT = "Use the toolbelt tools to look at this project, then say what you found."


def claude_env(clients: Clients, home: Path, model: ScriptedModel, **extra: str) -> dict[str, str]:
    """Claude Code's environment: the scripted model as the API, a fake key, and no
    traffic of its own (update checks, telemetry, error reports, feature flags)."""
    return clients.env(
        home,
        ANTHROPIC_BASE_URL=model.base_url,
        ANTHROPIC_API_KEY="sk-ant-api03-scripted-model-key",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        **extra,
    )


def configure(block: str, *, cwd: Path, env: dict[str, str]) -> None:
    """Runs the README's block, as a user would type it, in the project directory."""
    done = run_group(["bash", "-euo", "pipefail", "-c", block], cwd=cwd, env=env, timeout=SETUP_TIMEOUT_S)
    assert done.returncode == 0, f"the README's block failed ({done.returncode}):\n{block}\n{done.stdout}\n{done.stderr}"


def run_claude(clients: Clients, model: ScriptedModel, *, cwd: Path, env: dict[str, str], transport: str) -> dict[str, Any]:
    """One `claude -p` run; returns its JSON result."""
    done = run_group(
        [clients.bin("claude"), "-p", PROMPT, "--allowedTools", "mcp__toolbelt", "--output-format", "json", "--model", "sonnet"],
        cwd=cwd,
        env=env,
        timeout=RUN_TIMEOUT_S,
    )
    where = f"{CLIENT}/{transport}: claude -p exited {done.returncode}\nstdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}\n{model.describe()}"
    assert done.returncode == 0, where
    return json.loads(done.stdout)


def check_finished(result: dict[str, Any], model: ScriptedModel, transport: str) -> None:
    """Claude Code's own verdict: the turn ended with the script's last words."""
    assert result.get("is_error") is False and result.get("result") == "All done.", f"{CLIENT}/{transport}: {result}\n{model.describe()}"


def test_claude_code_stdio(clients: Clients, home: Path, workspace: Path, coding_tools: list[str]) -> None:
    with ScriptedModel(standard_steps()) as model:
        env = claude_env(clients, home, model)
        configure(fill(readme_block("claude-code"), root=workspace), cwd=workspace, env=env)
        result = run_claude(clients, model, cwd=workspace, env=env, transport="stdio")
        check_standard(model, client=CLIENT, transport="stdio", coding=coding_tools, images=True)
        check_finished(result, model, "stdio")


def test_claude_code_http(clients: Clients, home: Path, workspace: Path, served: Served, coding_tools: list[str]) -> None:
    with ScriptedModel(standard_steps()) as model:
        env = claude_env(clients, home, model, TOOLBELT_TOKEN=served.token)
        configure(fill(readme_block("claude-code-http"), root=workspace, url=served.url), cwd=workspace, env=env)
        config = (home / ".claude.json").read_text()
        assert served.url in config, "claude mcp add did not record the server"
        result = run_claude(clients, model, cwd=workspace, env=env, transport="http")
        check_standard(model, client=CLIENT, transport="http", coding=coding_tools, images=True)
        check_finished(result, model, "http")


# ---------------------------------------------------------------------------- the wire, read by the SDK


TOOLS = [
    {"name": "mcp__toolbelt__read_file", "description": "Reads a file.", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
    {"name": "mcp__toolbelt__grep", "description": "Searches.", "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}}},
]
ARGS = {"path": "src/lib.rs", "note": "wörld ✓ \"quoted\""}
TEXT = "All done — wörld ✓, in several pieces of text."


def test_anthropic_wire_read_by_the_sdk() -> None:
    steps = [call("read_file", **ARGS), call("grep", pattern="x"), say(TEXT)]  # by the count of results
    with ScriptedModel(steps) as model:
        client = anthropic.Anthropic(base_url=model.base_url, api_key="sk-ant-test", max_retries=0, timeout=10)
        first = [{"role": "user", "content": "look"}]

        plain = client.messages.create(model="claude-test", max_tokens=100, messages=first, tools=TOOLS)
        assert (plain.type, plain.role, plain.model, plain.stop_reason) == ("message", "assistant", "claude-test", "tool_use")
        (use,) = plain.content
        assert (use.type, use.name, use.input) == ("tool_use", "mcp__toolbelt__read_file", ARGS)
        assert use.id.startswith("toolu_") and plain.id.startswith("msg_")
        assert plain.usage.input_tokens > 0 and plain.usage.output_tokens > 0

        # The beta client, as Claude Code calls it (`?beta=true`), streamed.
        with client.beta.messages.stream(model="claude-test", max_tokens=100, messages=first, tools=TOOLS, extra_query={"beta": "true"}) as stream:
            events = [e.type for e in stream]
            streamed = stream.get_final_message()
        assert streamed.stop_reason == "tool_use"
        (use,) = streamed.content
        assert (use.name, use.input) == ("mcp__toolbelt__read_file", ARGS)
        assert events.count("input_json") > 2, "the input arrives in several pieces"

        image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
        conversation = [
            *first,
            {"role": "assistant", "content": [{"type": "tool_use", "id": use.id, "name": use.name, "input": use.input}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": use.id, "content": [{"type": "text", "text": "one"}, image, {"type": "text", "text": "two"}]},
                    {"type": "tool_result", "tool_use_id": "toolu_other", "content": "no such file", "is_error": True},
                ],
            },
        ]
        with client.messages.stream(model="claude-test", max_tokens=100, messages=conversation, tools=TOOLS) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        assert text == TEXT and final.stop_reason == "end_turn"
        assert [b.type for b in final.content] == ["text"]

        counted = client.beta.messages.count_tokens(model="claude-test", messages=conversation, tools=TOOLS, extra_query={"beta": "true"})
        assert counted.input_tokens > 0

        # A request without the script's tools (a title, a quota check) is a side one.
        side = client.messages.create(model="claude-haiku", max_tokens=10, messages=[{"role": "user", "content": "quota"}])
        assert [b.text for b in side.content if b.type == "text"] == ["ok"]

        results = model.last_results()
        assert [(r.call_id, r.text, r.images, r.is_error) for r in results] == [
            (use.id, "one\ntwo", ["image/png"], None),
            ("toolu_other", "no such file", [], True),
        ]
        assert [p.path for p in model.requests][1] == "/v1/messages?beta=true"
        assert not model.errors and not model.unknown, model.describe()


@pytest.mark.parametrize("body", [{"model": "m"}, {"model": "m", "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": 3}]}]}])
def test_anthropic_wire_rejects_what_it_cannot_read(body: dict[str, Any]) -> None:
    with ScriptedModel([say("x")]) as model:
        client = anthropic.Anthropic(base_url=model.base_url, api_key="sk-ant-test", max_retries=0, timeout=10)
        with pytest.raises(anthropic.BadRequestError):
            client.post("/v1/messages", body=body, cast_to=object)
        assert model.errors
