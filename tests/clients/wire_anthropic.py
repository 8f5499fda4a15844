"""The Anthropic Messages API as the scripted model speaks it, for Claude Code.

Routes: `POST /v1/messages` (streamed as server-sent events when the body says
`"stream": true`, else one JSON message) and `POST /v1/messages/count_tokens`, each
also with a query string (the SDK's beta client sends `?beta=true`).

The stream is the real API's event sequence: `message_start` (an empty message with
`stop_reason: null`), then per content block `content_block_start` (the first one
followed by a `ping`), one or more `content_block_delta` (`text_delta`, or
`input_json_delta` whose pieces join into the tool's input JSON, the first piece
empty as the API sends it), `content_block_stop`; then `message_delta` (stop reason
and the usage so far) and `message_stop`. The non-streamed answer is the `Message`
object those events build.

Claude Code asks `count_tokens` when an MCP result's rough estimate (characters / 4)
passes half of MAX_MCP_OUTPUT_TOKENS; the count given back here is the same rough
estimate over the request's text, so the client takes the same path it takes
against the real API.
"""

from __future__ import annotations

import json
import math
import secrets
import string
from http.server import BaseHTTPRequestHandler
from typing import Any

from model import Parsed, Step, ToolResult, send_json, send_sse

WIRE = "anthropic"
MESSAGES = "/v1/messages"
COUNT_TOKENS = "/v1/messages/count_tokens"
# How many characters of text or tool input JSON one delta carries, so that clients
# have to join pieces as they do against the real API.
TEXT_PIECE = 7
JSON_PIECE = 11
_B62 = string.ascii_letters + string.digits


def matches(method: str, path: str) -> bool:
    """`path` is the route without its query string."""
    return method == "POST" and path.rstrip("/") in (MESSAGES, COUNT_TOKENS)


def _route(path: str) -> str:
    return path.split("?", 1)[0].rstrip("/")


def _result_of(block: dict[str, Any]) -> ToolResult:
    """A `tool_result` block as the model reads it: its text blocks' text joined by
    newlines, its images' media types, `is_error` as sent (None when absent)."""
    content = block.get("content")
    texts: list[str] = []
    images: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for part in content:
            kind = part.get("type")
            if kind == "text":
                texts.append(part.get("text", ""))
            elif kind == "image":
                source = part.get("source") or {}
                images.append(source.get("media_type") or source.get("type") or "image/?")
    elif content is not None:
        raise ValueError(f"tool_result content of an unknown shape: {content!r}"[:300])
    return ToolResult(
        call_id=str(block.get("tool_use_id", "")),
        text="\n".join(texts),
        images=images,
        is_error=block.get("is_error"),
        raw=block,
    )


def parse(path: str, body: dict[str, Any]) -> Parsed:
    """What a Messages request offers and carries. A `count_tokens` request offers no
    tools to a model (it only measures), so its `tools` stay empty."""
    if not isinstance(body.get("messages"), list):
        raise ValueError("a Messages request without a messages list")
    results: list[ToolResult] = []
    for message in body["messages"]:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            results.extend(_result_of(b) for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    counting = _route(path) == COUNT_TOKENS
    tools = [] if counting else [str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)]
    return Parsed(
        wire=WIRE + ("/count_tokens" if counting else ""),
        path=path,
        tools=tools,
        results=results,
        stream=bool(body.get("stream")) and not counting,
        model=str(body.get("model", "")),
        body=body,
    )


# ---------------------------------------------------------------------------- answering


def _id(prefix: str) -> str:
    return prefix + "01" + "".join(secrets.choice(_B62) for _ in range(22))


def estimate_tokens(body: dict[str, Any]) -> int:
    """A rough token count of what a request sends (characters / 4, images 1600)."""
    chars = 0
    images = 0

    def walk(value: Any) -> None:
        nonlocal chars, images
        if isinstance(value, str):
            chars += len(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            if value.get("type") == "image":
                images += 1
                return
            for k, v in value.items():
                if k not in ("type", "cache_control", "tool_use_id", "id"):
                    walk(v)

    walk(body.get("system"))
    walk(body.get("messages"))
    walk(body.get("tools"))
    return max(1, math.ceil(chars / 4) + 1600 * images)


def _blocks(step: Step, tool_name: str | None) -> tuple[list[dict[str, Any]], str]:
    """The content blocks of the answer and its stop reason."""
    if step.tool:
        assert tool_name, "a tool step needs the tool's offered name"
        return [{"type": "tool_use", "id": _id("toolu_"), "name": tool_name, "input": step.args}], "tool_use"
    return [{"type": "text", "text": step.text or ""}], "end_turn"


def _output_tokens(blocks: list[dict[str, Any]]) -> int:
    size = sum(len(b.get("text", "")) + len(json.dumps(b.get("input", ""))) for b in blocks)
    return max(1, math.ceil(size / 4))


def _usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _stream_events(message: dict[str, Any], blocks: list[dict[str, Any]], stop: str, input_tokens: int) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": _usage(input_tokens, 1)}}),
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            if index == 0:
                events.append(("ping", {"type": "ping"}))
            for piece in _pieces(block["text"], TEXT_PIECE):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}))
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
            if index == 0:
                events.append(("ping", {"type": "ping"}))
            partial = json.dumps(block["input"], separators=(",", ":"))
            for piece in ["", *_pieces(partial, JSON_PIECE)]:
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    usage = {k: v for k, v in _usage(input_tokens, _output_tokens(blocks)).items() if k not in ("cache_creation", "service_tier")}
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def respond(handler: BaseHTTPRequestHandler, parsed: Parsed, step: Step, tool_name: str | None) -> None:
    """Answers with `step`: a tool call or a text, streamed when asked; a
    `count_tokens` request gets its count."""
    headers = {"request-id": _id("req_"), "anthropic-organization-id": "00000000-0000-4000-8000-000000000000"}
    input_tokens = estimate_tokens(parsed.body)
    if parsed.wire.endswith("/count_tokens"):
        send_json(handler, 200, {"input_tokens": input_tokens}, headers)
        return
    blocks, stop = _blocks(step, tool_name)
    message = {"id": _id("msg_"), "type": "message", "role": "assistant", "model": parsed.model or "claude-scripted"}
    if parsed.stream:
        send_sse(handler, _stream_events(message, blocks, stop, input_tokens), headers)
    else:
        body = {**message, "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": _usage(input_tokens, _output_tokens(blocks))}
        send_json(handler, 200, body, headers)
