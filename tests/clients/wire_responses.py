"""The OpenAI Responses API (`POST /v1/responses`), as Codex CLI speaks it.

What a request offers: the names of its `function` tools, and the functions of its
`namespace` tools as namespace, `__`, name: Codex offers an MCP server's tools as the
namespace `mcp__toolbelt` holding `read_file`, ..., so that is `mcp__toolbelt__read_file`,
and a call of it goes back as `"namespace": "mcp__toolbelt", "name": "read_file"`.
What it carries: its `input` items of type `function_call_output`, in order, whose
`output` is a string or a list of content items (`input_text`, `input_image` with a
data URL).

The answer is the one the real API gives: with `"stream": true`, the server-sent events
`response.created`, `response.in_progress`, `response.output_item.added`, then
`response.function_call_arguments.delta`/`.done` for a tool call, or
`response.content_part.added`, `response.output_text.delta`/`.done` and
`response.content_part.done` for a text, then `response.output_item.done` and
`response.completed` (with `usage`), each with its `sequence_number` and the event's
type both in the `event:` line and the data's `type`; without it, the `response` object
as JSON. Deltas carry `obfuscation` padding as the real API sends them by default.
"""

from __future__ import annotations

import json
import secrets
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from model import Parsed, Step, ToolResult, send_json, send_sse

WIRE = "openai-responses"

# Chunks of this many characters make one delta event (the real API sends a token or a few).
DELTA_CHARS = 24


def matches(method: str, path: str) -> bool:
    """`POST /v1/responses` (any prefix: the client's base_url ends in /v1)."""
    return method == "POST" and path.rstrip("/").endswith("/responses")


def _offered(tools: list[dict[str, Any]]) -> list[str]:
    """The names the model can call as a `function_call`: functions by name, a
    namespace's functions as namespace + `__` + name (custom and hosted tools are not
    called that way, so they are left out)."""
    names: list[str] = []
    for tool in tools:
        kind = tool.get("type")
        if kind == "function" and tool.get("name"):
            names.append(tool["name"])
        elif kind == "namespace":
            ns = str(tool.get("name", ""))
            for inner in tool.get("tools") or []:
                if inner.get("name"):
                    names.append(_join(ns, inner["name"]))
    return names


def _join(namespace: str, name: str) -> str:
    """Codex's own flat name of a namespaced function: `mcp__toolbelt` + `read_file`
    is `mcp__toolbelt__read_file`."""
    return f"{namespace}{name}" if namespace.endswith("_") else f"{namespace}__{name}"


def _mime(url: str) -> str:
    """The MIME type of a data URL (`data:image/png;base64,...`), else `image/*`."""
    if url.startswith("data:"):
        return url[5:].split(";", 1)[0].split(",", 1)[0] or "image/*"
    return "image/*"


def _result(item: dict[str, Any]) -> ToolResult:
    """A `function_call_output` input item as the model receives it."""
    output = item.get("output")
    texts: list[str] = []
    images: list[str] = []
    if isinstance(output, str):
        texts.append(output)
    elif isinstance(output, list):
        for part in output:
            kind = part.get("type")
            if kind in ("input_text", "output_text", "text"):
                texts.append(str(part.get("text", "")))
            elif kind == "input_image":
                images.append(_mime(str(part.get("image_url") or "")))
            else:
                raise ValueError(f"function_call_output: unknown content item {kind!r}")
    elif output is not None:
        raise ValueError(f"function_call_output: output is {type(output).__name__}")
    return ToolResult(call_id=str(item.get("call_id", "")), text="\n".join(texts), images=images, is_error=None, raw=item)


def parse(path: str, body: dict[str, Any]) -> Parsed:
    """What a Responses request offers and carries."""
    inputs = body.get("input")
    items = inputs if isinstance(inputs, list) else []
    results = [_result(i) for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return Parsed(
        wire=WIRE,
        path=path,
        tools=_offered(body.get("tools") or []),
        results=results,
        stream=bool(body.get("stream")),
        model=str(body.get("model", "")),
        body=body,
    )


# ---------------------------------------------------------------------- the answer


def _split(name: str, tools: list[dict[str, Any]]) -> tuple[str | None, str]:
    """The namespace and function name of an offered `name` (see `_offered`)."""
    for tool in tools:
        if tool.get("type") == "namespace":
            ns = str(tool.get("name", ""))
            for inner in tool.get("tools") or []:
                if _join(ns, str(inner.get("name", ""))) == name:
                    return ns, str(inner["name"])
    return None, name


def _usage(body: dict[str, Any], output_tokens: int) -> dict[str, Any]:
    """A plausible `usage`: input tokens estimated at four bytes each."""
    input_tokens = max(1, len(json.dumps(body.get("input", ""))) // 4)
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input_tokens + output_tokens,
    }


def _response(body: dict[str, Any], rid: str, created: int, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None) -> dict[str, Any]:
    """The `response` object, with the request's settings echoed as the API does."""
    reasoning = body.get("reasoning") or {}
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "completed_at": int(time.time()) if status == "completed" else None,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": str(body.get("model", "")),
        "output": output,
        "parallel_tool_calls": bool(body.get("parallel_tool_calls", True)),
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "prompt_cache_retention": None,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "safety_identifier": None,
        # The tier asked for ("auto" unless set) while running, the one that served it after.
        "service_tier": "default" if status == "completed" else body.get("service_tier", "auto"),
        "store": bool(body.get("store", True)),
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": body.get("metadata") or {},
    }


def _chunks(text: str) -> list[str]:
    return [text[i : i + DELTA_CHARS] for i in range(0, len(text), DELTA_CHARS)] or [""]


def _obfuscation(delta: str) -> str:
    """Padding the API adds to deltas so their lengths do not leak the tokens."""
    return secrets.token_urlsafe(12)[: max(1, 16 - len(delta) % 16)]


def respond(handler: BaseHTTPRequestHandler, parsed: Parsed, step: Step, tool_name: str | None) -> None:
    """Answers with `step`: a function call of `tool_name` or an assistant message."""
    body = parsed.body
    rid = "resp_" + secrets.token_hex(24)
    created = int(time.time())
    if step.tool and tool_name:
        namespace, name = _split(tool_name, body.get("tools") or [])
        arguments = json.dumps(step.args, separators=(",", ":"))
        item: dict[str, Any] = {
            "id": "fc_" + secrets.token_hex(24),
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": "call_" + secrets.token_urlsafe(18),
            "name": name,
        }
        if namespace is not None:
            item["namespace"] = namespace
        done = {**item, "status": "completed", "arguments": arguments}
        deltas: list[dict[str, Any]] = [
            {"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": 0, "delta": d, "obfuscation": _obfuscation(d)}
            for d in _chunks(arguments)
        ]
        middle = [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            *deltas,
            {"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": 0, "arguments": arguments},
            {"type": "response.output_item.done", "output_index": 0, "item": done},
        ]
        final, output_tokens = done, max(1, len(arguments) // 4)
    else:
        text = step.text or ""
        mid = "msg_" + secrets.token_hex(24)
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        item = {"id": mid, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        full = {**part, "text": text}
        done = {**item, "status": "completed", "content": [full]}
        middle = [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.content_part.added", "item_id": mid, "output_index": 0, "content_index": 0, "part": part},
            *(
                {"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "content_index": 0, "delta": d, "logprobs": [], "obfuscation": _obfuscation(d)}
                for d in _chunks(text)
            ),
            {"type": "response.output_text.done", "item_id": mid, "output_index": 0, "content_index": 0, "text": text, "logprobs": []},
            {"type": "response.content_part.done", "item_id": mid, "output_index": 0, "content_index": 0, "part": full},
            {"type": "response.output_item.done", "output_index": 0, "item": done},
        ]
        final, output_tokens = done, max(1, len(text) // 4)
    completed = _response(body, rid, created, "completed", [final], _usage(body, output_tokens))
    if not parsed.stream:
        send_json(handler, 200, completed, headers={"x-request-id": "req_" + secrets.token_hex(16)})
        return
    started = _response(body, rid, created, "in_progress", [], None)
    events = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
        *middle,
        {"type": "response.completed", "response": completed},
    ]
    # The API's order of keys: type, sequence_number, then the event's fields.
    numbered = [(e["type"], {"type": e["type"], "sequence_number": n, **e}) for n, e in enumerate(events)]
    send_sse(handler, numbered, headers={"x-request-id": "req_" + secrets.token_hex(16)})
