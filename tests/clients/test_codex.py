"""Codex CLI (`@openai/codex`, pinned in package.json) drives toolbelt over stdio and
streamable HTTP, configured with the README's `codex` blocks, with the scripted model
behind it speaking the OpenAI Responses API (`wire_responses.py`).

Codex runs as `codex exec` (non-interactive) with its own CODEX_HOME holding
config.toml: the README's `[mcp_servers.toolbelt]` block, and a model provider
pointing at the scripted model. The model's name is one Codex does not know, so Codex
uses its fallback model metadata: the MCP tools are offered directly in the request's
`tools` (as the functions of a `namespace` tool `mcp__toolbelt`), where the models of
its catalog get them deferred behind `tool_search` or inside code mode.

The last test drives the scripted model with OpenAI's Python SDK, so the wire module
stays true to the API the SDK reads.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import Clients, Served, check_standard, fill, readme_block, standard_steps, run_group
from model import ScriptedModel, call, say

CODEX_TIMEOUT_S = 120
# Not in Codex's model catalog: the fallback metadata offers MCP tools directly.
MODEL = "toolbelt-scripted"
MODEL_KEY_ENV = "TOOLBELT_TEST_MODEL_KEY"
PROMPT = "Use the toolbelt tools as asked."


def provider_config(base_url: str) -> str:
    """The part of config.toml the test adds to the README's block: the scripted model
    as the provider, and nothing that would reach the network (analytics, the curated
    plugins sync from GitHub)."""
    return f"""model = "{MODEL}"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "{MODEL_KEY_ENV}"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
"""


def run_codex(clients: Clients, home: Path, workspace: Path, config: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`codex exec` once, in its own process group (killed whole at the end), with
    CODEX_HOME = home/.codex holding `config`."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(config)
    argv = [
        clients.bin("codex"),
        "exec",
        "--skip-git-repo-check",  # the workspace is no git repository
        "--ephemeral",  # no session files
        "--json",  # events on stdout, one JSON a line
        "--color",
        "never",
        "-C",
        str(workspace),
        PROMPT,
    ]
    return run_group(argv, cwd=workspace, env=clients.env(home, CODEX_HOME=str(codex_home), **{MODEL_KEY_ENV: "sk-scripted-not-a-key"}, **env), timeout=CODEX_TIMEOUT_S)


def codex_events(out: str) -> list[dict[str, Any]]:
    """The JSON events `codex exec --json` printed."""
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def check_run(model: ScriptedModel, run: subprocess.CompletedProcess[str], transport: str, coding: list[str]) -> None:
    """`check_standard`, after a clean exit with every request answered, then Codex's
    own account of the five MCP calls."""
    context = f"\nexit {run.returncode}\nstdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-3000:]}\nmodel:\n{model.describe()}"
    assert run.returncode == 0, f"codex/{transport}: codex exec failed{context}"
    assert not model.unknown, f"codex/{transport}: requests the scripted model does not answer{context}"
    check_standard(model, client="codex", transport=transport, coding=coding, images=True)
    # What Codex reports of each call: the error result (isError) as "failed", the rest
    # "completed"; a call refused for want of approval would be "failed" too.
    events = codex_events(run.stdout)
    calls = [e["item"] for e in events if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "mcp_tool_call"]
    seen = [(c.get("server"), c.get("tool"), c.get("status")) for c in calls]
    expected = [("toolbelt", s.tool, "failed" if s.args.get("path") == "helo.txt" else "completed") for s in standard_steps() if s.tool]
    assert seen == expected, f"codex/{transport}: MCP calls {seen}{context}"


def test_codex_stdio(clients: Clients, home: Path, workspace: Path, coding_tools: list[str]) -> None:
    block = fill(readme_block("codex"), root=workspace)
    with ScriptedModel(standard_steps()) as model:
        run = run_codex(clients, home, workspace, provider_config(model.base_url) + "\n" + block)
        check_run(model, run, "stdio", coding_tools)


def test_codex_http(clients: Clients, home: Path, workspace: Path, served: Served, coding_tools: list[str]) -> None:
    block = fill(readme_block("codex-http"), root=workspace, url=served.url)
    with ScriptedModel(standard_steps()) as model:
        run = run_codex(clients, home, workspace, provider_config(model.base_url) + "\n" + block, TOOLBELT_TOKEN=served.token)
        check_run(model, run, "http", coding_tools)


# ---------------------------------------------------------------------- the wire, read by the SDK


def test_responses_wire_with_openai_sdk() -> None:
    """OpenAI's SDK reads the scripted model's answers, streamed and not: a function
    call (plain and in a namespace, as Codex offers MCP tools), then a text."""
    import openai

    tool = {"type": "function", "name": "read_file", "description": "Reads a file.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
    namespace = {"type": "namespace", "name": "mcp__toolbelt", "description": "toolbelt", "tools": [tool]}
    steps = [call("read_file", path="hello.txt"), say("All done.")]
    with ScriptedModel(steps) as model:
        client = openai.OpenAI(base_url=f"{model.base_url}/v1", api_key="sk-scripted-not-a-key", max_retries=0)
        for tools, namespaced in (([tool], None), ([namespace], "mcp__toolbelt")):
            # Streamed: the SDK's stream helper checks the event sequence as it accumulates it.
            with client.responses.stream(model=MODEL, input="read hello.txt", tools=tools) as stream:
                kinds = [event.type for event in stream]
                first = stream.get_final_response()
            assert kinds[:3] == ["response.created", "response.in_progress", "response.output_item.added"], kinds
            assert kinds[-2:] == ["response.output_item.done", "response.completed"], kinds
            assert "response.function_call_arguments.done" in kinds, kinds
            fc = first.output[0]
            assert fc.type == "function_call" and fc.name == "read_file" and fc.namespace == namespaced, fc
            assert json.loads(fc.arguments) == {"path": "hello.txt"}
            assert first.status == "completed" and first.usage is not None and first.usage.total_tokens > 0

            follow = [
                {"role": "user", "content": "read hello.txt"},
                {"type": "function_call", "call_id": fc.call_id, "name": fc.name, "arguments": fc.arguments, **({"namespace": namespaced} if namespaced else {})},
                {
                    "type": "function_call_output",
                    "call_id": fc.call_id,
                    "output": [{"type": "input_text", "text": "MARKER"}, {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"}],
                },
            ]
            with client.responses.stream(model=MODEL, input=follow, tools=tools) as stream:
                kinds = [event.type for event in stream]
                second = stream.get_final_response()
            assert "response.output_text.delta" in kinds and "response.content_part.done" in kinds, kinds
            assert second.output_text == "All done."

            # Not streamed: the same answers as one `response` object.
            plain = client.responses.create(model=MODEL, input=follow, tools=tools)
            assert plain.output_text == "All done." and plain.usage is not None
            plain_call = client.responses.create(model=MODEL, input="read hello.txt", tools=tools)
            assert plain_call.output[0].type == "function_call" and plain_call.output[0].name == "read_file"

        results = model.last_results()
        assert [(r.text, r.images) for r in results] == [("MARKER", ["image/png"])], results
