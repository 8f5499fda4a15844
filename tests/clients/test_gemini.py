"""gemini-cli (@google/gemini-cli, pinned in package.json) drives toolbelt over stdio
and over streamable HTTP, configured with the README's blocks, against the scripted
model speaking the Gemini API (wire_gemini.py); and the official google-genai Python
SDK reads that wire back, so the scripted model speaks it as Google does.

gemini-cli runs headless: `gemini -p PROMPT --approval-mode yolo --skip-trust`, with its
own HOME holding ~/.gemini/settings.json (the README's `mcpServers` block, the API key
chosen as the auth method, no telemetry, no update check), GEMINI_API_KEY a fake key and
GOOGLE_GEMINI_BASE_URL the scripted model. It names MCP tools `mcp_<server>_<tool>`
beside its own read_file, grep_search and glob, so the model asks for
`mcp_toolbelt_read_file`, never the built-in. It picks the model itself: first its
router asks a flash-lite model for a complexity score, as JSON to a schema, which
wire_gemini answers in kind.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import Clients, Served, check_standard, fill, readme_block, standard_steps, run_group
from google import genai
from google.genai import types
from model import ScriptedModel, call, say

GEMINI_TIMEOUT_S = 120
PROMPT = "Use the toolbelt tools to look at the project, then say you are done."


def resolve(tool: str, offered: list[str]) -> str | None:
    """toolbelt's `tool` as gemini-cli offers it: `mcp_toolbelt_<tool>`, never the
    built-in of the same name."""
    name = f"mcp_toolbelt_{tool}"
    return name if name in offered else None


def settings(servers: dict[str, Any]) -> dict[str, Any]:
    """The run's ~/.gemini/settings.json: the README's block, the API key chosen as the
    auth method (as gemini-cli's auth dialog leaves it), and nothing that phones home:
    without `usageStatisticsEnabled: false` it looks up Google's log server at once."""
    return {
        **servers,
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }


def run_gemini(clients: Clients, home: Path, workspace: Path, model: ScriptedModel, servers: dict[str, Any], **env: str) -> subprocess.CompletedProcess[str]:
    """`gemini -p` once, headless, in its own process group (killed whole at the end:
    the stdio server is its child), with HOME/.gemini/settings.json from `servers`."""
    gemini_dir = home / ".gemini"
    gemini_dir.mkdir(parents=True, exist_ok=True)
    (gemini_dir / "settings.json").write_text(json.dumps(settings(servers), indent=2))
    argv = [
        clients.bin("gemini"),
        "--prompt",
        PROMPT,
        "--approval-mode",
        "yolo",  # headless, anything else leaves out the tools that would ask
        "--skip-trust",  # the workspace is no folder the user trusted before
        "--output-format",
        "json",  # the answer and gemini-cli's own count of the tool calls
    ]
    return run_group(argv, cwd=workspace, env=clients.env(home, GEMINI_API_KEY="fake-gemini-key-for-tests", GOOGLE_GEMINI_BASE_URL=model.base_url, **env), timeout=GEMINI_TIMEOUT_S)


def check_run(model: ScriptedModel, run: subprocess.CompletedProcess[str], transport: str, coding: list[str]) -> None:
    """`check_standard`, after a clean exit with every request answered, then
    gemini-cli's own count of the MCP calls: all five ran, the error one failed."""
    context = f"\nexit {run.returncode}\nstdout:\n{run.stdout[-3000:]}\nstderr:\n{run.stderr[-3000:]}\nmodel:\n{model.describe()}"
    assert run.returncode == 0, f"gemini-cli/{transport}: gemini failed{context}"
    assert not model.unknown, f"gemini-cli/{transport}: requests the scripted model does not answer{context}"
    # A headless gemini-cli (-p) leaves out every tool named ask_user, its own and an MCP
    # server's alike (nobody could answer): the others must all be offered.
    headless = [name for name in coding if name != "ask_user"]
    check_standard(model, client="gemini-cli", transport=transport, coding=headless, images=True)
    tools = json.loads(run.stdout)["stats"]["tools"]["byName"]
    seen = {name: (t["count"], t["fail"]) for name, t in tools.items()}
    assert seen == {"mcp_toolbelt_read_file": (4, 1), "mcp_toolbelt_grep": (1, 0)}, f"gemini-cli/{transport}: tool calls (count, failed) {seen}{context}"


def test_gemini_stdio(clients: Clients, home: Path, workspace: Path, coding_tools: list[str]) -> None:
    servers = json.loads(fill(readme_block("gemini-cli"), root=workspace))
    with ScriptedModel(standard_steps(), resolve=resolve) as model:
        run = run_gemini(clients, home, workspace, model, servers)
        check_run(model, run, "stdio", coding_tools)


def test_gemini_http(clients: Clients, home: Path, workspace: Path, served: Served, coding_tools: list[str]) -> None:
    servers = json.loads(fill(readme_block("gemini-cli-http"), root=workspace, url=served.url))
    with ScriptedModel(standard_steps(), resolve=resolve) as model:
        run = run_gemini(clients, home, workspace, model, servers, TOOLBELT_TOKEN=served.token)
        check_run(model, run, "http", coding_tools)


# ---------------------------------------------------------------------------- the wire, read by Google's SDK


def test_wire_read_by_google_genai() -> None:
    decl = types.FunctionDeclaration(
        name="read_file",
        description="Reads a file.",
        parameters_json_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    )
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[decl])])
    steps = [call("read_file", path="hello.txt"), say("All done: <ok> & said in two pieces, ünïcode too.")]
    with ScriptedModel(steps) as model:
        client = genai.Client(api_key="fake", http_options=types.HttpOptions(base_url=model.base_url, api_version="v1beta"))

        plain = client.models.generate_content(model="gemini-2.5-flash", contents="look", config=config)
        assert plain.function_calls and plain.function_calls[0].name == "read_file"
        assert plain.function_calls[0].args == {"path": "hello.txt"}
        assert plain.candidates[0].content.parts[0].thought_signature, "a function call comes signed"
        assert plain.candidates[0].finish_reason == types.FinishReason.STOP
        assert plain.model_version == "gemini-2.5-flash" and plain.response_id
        assert plain.usage_metadata.total_token_count == plain.usage_metadata.prompt_token_count + plain.usage_metadata.candidates_token_count

        chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="look", config=config))
        assert [c.function_calls[0].args for c in chunks if c.function_calls] == [{"path": "hello.txt"}]
        assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP

        history = [
            types.Content(role="user", parts=[types.Part(text="look")]),
            plain.candidates[0].content,
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(name="read_file", response={"output": "MARKER"}),
                    types.Part.from_bytes(data=b"\x89PNG\r\n\x1a\n", mime_type="image/png"),
                ],
            ),
        ]
        chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents=history, config=config))
        assert len(chunks) == 2 and [c.candidates[0].finish_reason for c in chunks] == [None, types.FinishReason.STOP]
        assert "".join(c.text for c in chunks) == "All done: <ok> & said in two pieces, ünïcode too."
        results = model.last_results()
        assert [(r.call_id, r.text, r.images) for r in results] == [("read_file", "MARKER", ["image/png"])]

        # A side request asking for JSON gets JSON that fits its schema (gemini-cli's
        # next-speaker check: "user" ends the turn).
        schema = {
            "type": "object",
            "properties": {"reasoning": {"type": "string"}, "next_speaker": {"type": "string", "enum": ["model", "user"]}},
            "required": ["reasoning", "next_speaker"],
        }
        judged = client.models.generate_content(
            model="gemini-2.5-flash-lite",
            contents="who speaks next?",
            config=types.GenerateContentConfig(response_mime_type="application/json", response_json_schema=schema),
        )
        assert judged.parsed == {"reasoning": "ok", "next_speaker": "user"}
        # gemini-cli's router: a schema in the API's own capitals, a score from 1 up.
        routed = client.models.generate_content(
            model="gemini-2.5-flash-lite",
            contents="how hard is this?",
            config=types.GenerateContentConfig(
                response_mime_type="application/json",
                response_schema=types.Schema(
                    type=types.Type.OBJECT,
                    properties={"complexity_reasoning": types.Schema(type=types.Type.STRING), "complexity_score": types.Schema(type=types.Type.INTEGER)},
                    required=["complexity_reasoning", "complexity_score"],
                ),
            ),
        )
        assert json.loads(routed.text) == {"complexity_reasoning": "ok", "complexity_score": 1}

        counted = client.models.count_tokens(model="gemini-2.5-flash", contents="hello")
        assert counted.total_tokens and counted.total_tokens > 0
        assert not model.errors and not model.unknown, model.describe()
