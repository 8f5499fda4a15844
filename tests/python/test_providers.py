"""Reads the scripted model provider (toolbelt-agent's `testing` feature, run as the
`scripted_provider` example) with the official `openai` and `anthropic` Python SDKs:
if their parsers read back exactly what the script says, streamed and not, the
server speaks the real wire formats.

The example sits beside the binary under test: TOOLBELT_BIN=/path/to/debug/toolbelt
means /path/to/debug/examples/scripted_provider (SCRIPTED_PROVIDER overrides it).
Run through tests/python/run.sh, which creates the virtual environment first.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

START_TIMEOUT_S = 20


def provider_binary() -> Path:
    explicit = os.environ.get("SCRIPTED_PROVIDER")
    if explicit:
        return Path(explicit)
    bin_path = os.environ.get("TOOLBELT_BIN")
    if not bin_path:
        pytest.fail("set TOOLBELT_BIN (see tests/python/run.sh)")
    return Path(bin_path).parent / "examples" / "scripted_provider"


@dataclass
class Served:
    base_url: str
    addr: str

    def requests(self) -> list[dict[str, Any]]:
        with urllib.request.urlopen(f"http://{self.addr}/_scripted/requests", timeout=5) as r:
            return json.load(r)["requests"]

    def remaining(self) -> int:
        with urllib.request.urlopen(f"http://{self.addr}/_scripted/requests", timeout=5) as r:
            return json.load(r)["remaining"]


@contextmanager
def serve(tmp_path: Path, script: dict[str, Any]) -> Iterator[Served]:
    binary = provider_binary()
    if not os.access(binary, os.X_OK):
        pytest.fail(
            f"{binary} is missing: build it with "
            "`cargo build -p toolbelt-agent --features testing --example scripted_provider`"
        )
    path = tmp_path / f"script-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(script))
    proc = subprocess.Popen(
        [str(binary), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT_S)
        assert ready, "scripted_provider printed nothing"
        line = proc.stdout.readline()
        assert line, f"scripted_provider exited: {proc.stderr.read().decode()}"
        info = json.loads(line)
        assert info["kind"] == script["kind"]
        yield Served(base_url=info["base_url"], addr=info["addr"])
    finally:
        # Closing stdin stops it.
        proc.stdin.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, proc.stderr.read().decode()


TEXT = "Hello wörld — the scripted model speaks ✓ in small pieces."
CALLS = [
    {"id": "call_read", "name": "read_file", "arguments": '{"path": "src/main.rs", "offset": 10}'},
    {"id": "call_grep", "name": "grep", "arguments": '{"pattern": "fn main", "glob": "*.rs"}'},
]
TOOLS_OPENAI = [
    {
        "type": "function",
        "function": {"name": n, "description": n, "parameters": {"type": "object", "properties": {}}},
    }
    for n in ("read_file", "grep")
]
TOOLS_ANTHROPIC = [
    {"name": n, "description": n, "input_schema": {"type": "object", "properties": {}}}
    for n in ("read_file", "grep")
]
USAGE = {"input_tokens": 120, "output_tokens": 17, "cached_tokens": 64}


# ---- OpenAI ----


def openai_client(served: Served, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.base_url, api_key="sk-test", max_retries=retries, timeout=10)


def test_openai_text_plain_and_streamed(tmp_path: Path) -> None:
    script = {
        "kind": "openai",
        "replies": [
            {"text": TEXT, "usage": USAGE},
            {"text": TEXT, "usage": USAGE, "chunk_bytes": 9},
            {"text": TEXT, "reasoning": "Let me think.", "stop": "length"},
        ],
    }
    with serve(tmp_path, script) as served:
        client = openai_client(served)
        messages = [{"role": "user", "content": "hi"}]

        plain = client.chat.completions.create(model="gpt-test", messages=messages)
        assert plain.object == "chat.completion"
        assert plain.model == "gpt-test"
        choice = plain.choices[0]
        assert (choice.message.role, choice.message.content, choice.finish_reason) == (
            "assistant",
            TEXT,
            "stop",
        )
        assert choice.message.tool_calls is None
        assert (plain.usage.prompt_tokens, plain.usage.completion_tokens, plain.usage.total_tokens) == (
            120,
            17,
            137,
        )
        assert plain.usage.prompt_tokens_details.cached_tokens == 64

        chunks = list(
            client.chat.completions.create(
                model="gpt-test",
                messages=messages,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        assert all(c.object == "chat.completion.chunk" for c in chunks)
        assert chunks[0].choices[0].delta.role == "assistant"
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == TEXT
        assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3
        finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        assert finishes == ["stop"]
        assert chunks[-1].choices == []
        assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (120, 17)
        assert chunks[-1].usage.prompt_tokens_details.cached_tokens == 64

        # Without include_usage: no usage at all; reasoning as DeepSeek streams it.
        chunks = list(client.chat.completions.create(model="gpt-test", messages=messages, stream=True))
        assert all(c.usage is None for c in chunks)
        reasoning = "".join(
            (c.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for c in chunks
        )
        assert reasoning == "Let me think."
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == TEXT
        assert chunks[-1].choices[0].finish_reason == "length"

        requests = served.requests()
        assert [r["body"].get("stream", False) for r in requests] == [False, True, True]
        assert requests[0]["path"] == "/v1/chat/completions"
        headers = dict(requests[0]["headers"])
        assert headers["authorization"] == "Bearer sk-test"
        assert headers["content-type"] == "application/json"
        assert served.remaining() == 0


def test_openai_parallel_tool_calls(tmp_path: Path) -> None:
    script = {"kind": "openai", "replies": [{"tool_calls": CALLS}, {"tool_calls": CALLS, "chunk_bytes": 13}]}
    with serve(tmp_path, script) as served:
        client = openai_client(served)
        messages = [{"role": "user", "content": "look"}]

        plain = client.chat.completions.create(model="gpt-test", messages=messages, tools=TOOLS_OPENAI)
        choice = plain.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content is None
        assert [(c.id, c.type, c.function.name, c.function.arguments) for c in choice.message.tool_calls] == [
            (c["id"], "function", c["name"], c["arguments"]) for c in CALLS
        ]

        # The SDK's own accumulator, over a stream split every 13 bytes.
        with client.chat.completions.stream(model="gpt-test", messages=messages, tools=TOOLS_OPENAI) as stream:
            fragments = 0
            for event in stream:
                if event.type == "tool_calls.function.arguments.delta":
                    fragments += 1
            final = stream.get_final_completion()
        calls = final.choices[0].message.tool_calls
        assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
            (c["id"], c["name"], c["arguments"]) for c in CALLS
        ]
        assert fragments > 2 * len(CALLS), "the arguments arrive in several fragments"
        assert final.choices[0].finish_reason == "tool_calls"


def test_openai_rate_limit_after_retries(tmp_path: Path) -> None:
    error = {"status": 429, "retry_after": "0.05", "message": "Rate limit reached for requests"}
    script = {"kind": "openai", "replies": [{"error": error}, {"error": error}, {"text": "late"}]}
    with serve(tmp_path, script) as served:
        client = openai_client(served, retries=1)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "hi"}])
        e = caught.value
        assert e.status_code == 429
        assert e.body == {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
        assert e.code == "rate_limit_exceeded"
        assert e.response.headers["retry-after"] == "0.05"
        assert e.request_id and e.request_id.startswith("req_")
        requests = served.requests()
        assert len(requests) == 2, "one try and one retry"
        assert dict(requests[1]["headers"]).get("x-stainless-retry-count") == "1"
        assert served.remaining() == 1


# ---- Anthropic ----


def anthropic_client(served: Served, retries: int = 0) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=served.base_url, api_key="sk-ant-test", max_retries=retries, timeout=10)


def test_anthropic_text_plain_and_streamed(tmp_path: Path) -> None:
    script = {
        "kind": "anthropic",
        "replies": [
            {"text": TEXT, "usage": USAGE},
            {"text": TEXT, "reasoning": "Let me think.", "usage": USAGE, "chunk_bytes": 9},
            {"text": TEXT, "stop": "max_tokens"},
        ],
    }
    with serve(tmp_path, script) as served:
        client = anthropic_client(served)
        messages = [{"role": "user", "content": "hi"}]

        plain = client.messages.create(model="claude-test", max_tokens=100, messages=messages)
        assert (plain.type, plain.role, plain.model, plain.stop_reason) == (
            "message",
            "assistant",
            "claude-test",
            "end_turn",
        )
        assert [(b.type, b.text) for b in plain.content] == [("text", TEXT)]
        u = plain.usage
        assert (u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens, u.output_tokens) == (
            56,
            64,
            0,
            17,
        )

        with client.messages.stream(model="claude-test", max_tokens=100, messages=messages) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        assert text == TEXT
        assert [b.type for b in final.content] == ["thinking", "text"]
        assert final.content[0].thinking == "Let me think."
        assert final.content[0].signature
        assert final.content[1].text == TEXT
        assert final.stop_reason == "end_turn"
        assert (final.usage.input_tokens, final.usage.cache_read_input_tokens, final.usage.output_tokens) == (
            56,
            64,
            17,
        )

        events = list(client.messages.create(model="claude-test", max_tokens=100, messages=messages, stream=True))
        types = [e.type for e in events]
        assert types[0] == "message_start" and types[-1] == "message_stop"
        assert types[-2] == "message_delta"
        assert events[-2].delta.stop_reason == "max_tokens"
        assert "".join(e.delta.text for e in events if e.type == "content_block_delta") == TEXT

        requests = served.requests()
        assert [r["path"] for r in requests] == ["/v1/messages"] * 3
        headers = dict(requests[0]["headers"])
        # The key as the SDK sends it (x-api-key, or a bearer token in newer SDKs).
        assert "sk-ant-test" in (headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer "))
        assert headers["anthropic-version"]
        assert requests[1]["body"]["stream"] is True


def test_anthropic_parallel_tool_calls(tmp_path: Path) -> None:
    script = {"kind": "anthropic", "replies": [{"tool_calls": CALLS}, {"text": "Looking.", "tool_calls": CALLS, "chunk_bytes": 13}]}
    with serve(tmp_path, script) as served:
        client = anthropic_client(served)
        messages = [{"role": "user", "content": "look"}]
        expected = [(c["id"], c["name"], json.loads(c["arguments"])) for c in CALLS]

        plain = client.messages.create(model="claude-test", max_tokens=100, messages=messages, tools=TOOLS_ANTHROPIC)
        assert plain.stop_reason == "tool_use"
        assert [(b.id, b.name, b.input) for b in plain.content] == expected

        with client.messages.stream(model="claude-test", max_tokens=100, messages=messages, tools=TOOLS_ANTHROPIC) as stream:
            pieces = [e.delta.partial_json for e in stream if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
            final = stream.get_final_message()
        assert final.stop_reason == "tool_use"
        assert final.content[0].type == "text" and final.content[0].text == "Looking."
        assert [(b.id, b.name, b.input) for b in final.content[1:]] == expected
        assert "".join(pieces) == "".join(c["arguments"] for c in CALLS)
        assert len(pieces) > 2 * len(CALLS), "the input arrives in several pieces"


def test_anthropic_rate_limit_after_retries(tmp_path: Path) -> None:
    error = {"status": 429, "retry_after": "0.05", "message": "Number of requests has exceeded your rate limit"}
    script = {"kind": "anthropic", "replies": [{"error": error}, {"error": error}], "when_done": {"error": {"status": 529, "message": "Overloaded"}}}
    with serve(tmp_path, script) as served:
        client = anthropic_client(served, retries=1)
        messages = [{"role": "user", "content": "hi"}]
        with pytest.raises(anthropic.RateLimitError) as caught:
            client.messages.create(model="claude-test", max_tokens=100, messages=messages)
        e = caught.value
        assert e.status_code == 429
        assert e.body["type"] == "error"
        assert e.body["error"] == {"type": "rate_limit_error", "message": error["message"]}
        assert e.response.headers["retry-after"] == "0.05"
        assert e.request_id and e.request_id.startswith("req_")
        assert len(served.requests()) == 2

        with pytest.raises(anthropic.APIStatusError) as caught:
            anthropic_client(served).messages.create(model="claude-test", max_tokens=100, messages=messages)
        assert caught.value.status_code == 529
        assert caught.value.body["error"]["type"] == "overloaded_error"
