"""A scripted model on 127.0.0.1 that speaks the wire formats of the agent CLIs under
test, and records what each request carries.

One server answers every wire format it knows; each format lives in a module of its
own (`wire_anthropic.py`: Anthropic Messages, for Claude Code; `wire_responses.py`:
OpenAI Responses, for Codex; `wire_gemini.py`: the Gemini API, for gemini-cli), with
three functions:

    matches(method: str, path: str) -> bool
    parse(path: str, body: dict) -> Parsed          # what the request offers and carries
    respond(handler, parsed: Parsed, step: Step, tool_name: str | None) -> None

The script is a list of steps: `call("read_file", path="hello.txt")` makes the model
ask for a tool (under the name the client gave it, found by `resolve`), `say("done")`
ends the turn. The step a request gets is chosen by how many tool results its
conversation already holds, so a client that retries a request gets the same answer.
A request that offers none of the script's tools (title generation, quota checks,
summaries) is a side request and gets `say("ok")`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class Step:
    """One answer of the model: a tool call (tool and args) or a text."""

    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    text: str | None = None


def call(tool: str, **args: Any) -> Step:
    return Step(tool=tool, args=args)


def say(text: str) -> Step:
    return Step(text=text)


@dataclass
class ToolResult:
    """A tool result as the model receives it: its text, the MIME types of its images."""

    call_id: str
    text: str
    images: list[str] = field(default_factory=list)
    is_error: bool | None = None
    raw: Any = None


@dataclass
class Parsed:
    """What a request offers (tool names) and carries (tool results, in order)."""

    wire: str
    path: str
    tools: list[str]
    results: list[ToolResult]
    stream: bool
    model: str
    body: dict[str, Any]


def default_resolve(tool: str, offered: list[str]) -> str | None:
    """The offered name of toolbelt's `tool`: one naming the server and ending in the
    tool's name (`mcp__toolbelt__read_file`), else the bare name when offered."""
    named = [n for n in offered if "toolbelt" in n and (n.endswith("__" + tool) or n.endswith("_" + tool))]
    if named:
        return min(named, key=len)
    return tool if tool in offered else None


class ScriptedModel:
    """The server: `with ScriptedModel(steps) as model: ... model.base_url ...`."""

    def __init__(
        self,
        steps: list[Step],
        resolve: Callable[[str, list[str]], str | None] = default_resolve,
    ) -> None:
        import wire_anthropic
        import wire_gemini
        import wire_responses

        self.steps = steps
        self.resolve = resolve
        self.wires = [wire_anthropic, wire_responses, wire_gemini]
        self.requests: list[Parsed] = []
        self.unknown: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                model._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                model._handle(self, "POST")

            def do_HEAD(self) -> None:  # noqa: N802
                model._handle(self, "HEAD")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ScriptedModel:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------ recording

    def main_requests(self) -> list[Parsed]:
        """The requests that offered the script's tools, in order."""
        with self.lock:
            return [p for p in self.requests if self._is_main(p)]

    def last_results(self) -> list[ToolResult]:
        """The tool results of the longest main conversation seen."""
        mains = self.main_requests()
        return max((p.results for p in mains), key=len, default=[])

    def describe(self) -> str:
        """What was received, for assertion messages."""
        with self.lock:
            lines = [f"{p.wire} {p.path} model={p.model} tools={len(p.tools)} results={len(p.results)}" for p in self.requests]
        lines += [f"unanswered {m} {p}" for m, p in self.unknown]
        lines += [f"error: {e}" for e in self.errors]
        return "\n".join(lines) or "(no requests)"

    # ------------------------------------------------------------------ serving

    def _is_main(self, parsed: Parsed) -> bool:
        tools = {s.tool for s in self.steps if s.tool}
        return any(self.resolve(t, parsed.tools) for t in tools)

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        route = urlsplit(path).path
        wire = next((w for w in self.wires if w.matches(method, route)), None)
        if wire is None:
            with self.lock:
                self.unknown.append((method, path))
            send_json(handler, 404, {"error": {"type": "not_found", "message": f"no route {method} {route}"}})
            return
        try:
            body = json.loads(raw) if raw else {}
            parsed = wire.parse(path, body)
        except Exception as e:  # a request this model cannot read is a test failure
            with self.lock:
                self.errors.append(f"{method} {path}: {e!r}")
            send_json(handler, 400, {"error": {"type": "invalid_request_error", "message": repr(e)}})
            return
        with self.lock:
            self.requests.append(parsed)
        if self._is_main(parsed):
            index = len(parsed.results)
            step = self.steps[index] if index < len(self.steps) else say("done")
        else:
            step = say("ok")
        name = self.resolve(step.tool, parsed.tools) if step.tool else None
        if step.tool and name is None:
            with self.lock:
                self.errors.append(f"{step.tool} is not among the offered tools {parsed.tools}")
            step, name = say(f"the tool {step.tool} was not offered"), None
        wire.respond(handler, parsed, step, name)


# ---------------------------------------------------------------------- HTTP helpers


def send_json(handler: BaseHTTPRequestHandler, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(obj).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


def send_sse(handler: BaseHTTPRequestHandler, events: list[tuple[str | None, Any]], headers: dict[str, str] | None = None) -> None:
    """Sends `events` (event name or None, JSON-able data or a raw string) as
    `text/event-stream`, chunked, then ends the stream."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Transfer-Encoding", "chunked")
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.end_headers()
    for event, data in events:
        text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        frame = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
        chunk = frame.encode()
        handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        handler.wfile.flush()
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()
