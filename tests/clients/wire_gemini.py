"""The Gemini API (generativelanguage.googleapis.com), as gemini-cli speaks it through
the @google/genai SDK: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`,
`:generateContent` and `:countTokens`.

A request carries `contents` (role `user` / `model`, each a list of parts), the tools as
`tools[].functionDeclarations[]` and the generation settings in `generationConfig`. A
tool call is a `functionCall` part (`name`, `args`; Google's API sends no `id`, so the
client matches results by order); its result comes back as a `functionResponse` part
(`id`, `name`, `response`) in the next user content. gemini-cli puts what the tool
returned in `response.output` (text parts joined by newlines), an error in
`response.error`, and images as `inlineData` parts: inside the functionResponse
(`functionResponse.parts`, for models named `gemini-3-*`) or right after it in the same
content (other models, `gemini-3.1-pro-preview` and `gemini-3.8-flash` among them).

Streamed answers are Server-Sent Events as Google sends them: one `data: {json}` line
per chunk, each chunk a whole GenerateContentResponse (`candidates`, `usageMetadata`,
`modelVersion`, `responseId`), frames ended by CRLF CRLF; the last chunk carries the
`finishReason`, and a function call its `thoughtSignature`. Whole answers are the same
object, pretty-printed.

Side requests that ask for JSON (`generationConfig.responseMimeType` is
`application/json`, with a `responseJsonSchema` or `responseSchema`: gemini-cli's model
router, next-speaker check, loop detection) are answered with a value that fits the
schema instead of the step's text.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from model import Parsed, Step, ToolResult

WIRE = "gemini"

ROUTE = re.compile(r"^/v1(?:beta|alpha)?/(?:models|tunedModels)/([^/:]+):(streamGenerateContent|generateContent|countTokens)$")

# What a side request asking for an enum gets, when the enum offers it: "user" ends
# gemini-cli's turn at the next-speaker check (the other choices are harmless firsts).
ENUM_PREFERENCES = ("user",)


def matches(method: str, path: str) -> bool:
    """A POST to a model's generateContent, streamGenerateContent or countTokens."""
    return method == "POST" and ROUTE.match(path) is not None


def _route(path: str) -> tuple[str, str]:
    m = ROUTE.match(urlsplit(path).path)
    if not m:
        raise ValueError(f"not a Gemini API path: {path}")
    return m.group(1), m.group(2)


# ---------------------------------------------------------------------------- requests


def _tool_names(body: dict[str, Any]) -> list[str]:
    """The names of the function declarations offered, in order."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or []:
            names.append(decl["name"])
    return names


def _result_text(response: Any) -> str:
    """What the model reads of a functionResponse's `response` object."""
    if isinstance(response, dict):
        for key in ("output", "error"):
            value = response.get(key)
            if isinstance(value, str):
                return value
        if not response:
            return ""
    return json.dumps(response)


def _mime(blob: dict[str, Any]) -> str:
    """An inlineData's MIME type. The API reads proto JSON, which takes either
    spelling: Google's Python SDK sends `mime_type`, the JavaScript one `mimeType`."""
    return str(blob.get("mimeType") or blob.get("mime_type") or "")


def _results(body: dict[str, Any]) -> list[ToolResult]:
    """The functionResponse parts of the conversation, in order. Images are the
    inlineData parts inside a functionResponse or beside it, after it in the same
    content."""
    results: list[ToolResult] = []
    for content in body.get("contents") or []:
        last: ToolResult | None = None
        for part in content.get("parts") or []:
            fr = part.get("functionResponse")
            if fr is not None:
                response = fr.get("response")
                images = [_mime(p["inlineData"]) for p in fr.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("inlineData"), dict)]
                last = ToolResult(
                    call_id=str(fr.get("id") or fr.get("name") or ""),
                    text=_result_text(response),
                    images=images,
                    is_error=isinstance(response, dict) and "error" in response,
                    raw=fr,
                )
                results.append(last)
            elif last is not None and isinstance(part.get("inlineData"), dict):
                last.images.append(_mime(part["inlineData"]))
    return results


def parse(path: str, body: dict[str, Any]) -> Parsed:
    """What a request offers and carries; a countTokens request offers nothing."""
    model, method = _route(path)
    if not isinstance(body, dict):
        raise ValueError("the request body is not a JSON object")
    if method != "countTokens" and not isinstance(body.get("contents"), list):
        raise ValueError("a generateContent request without `contents`")
    return Parsed(
        wire=WIRE,
        path=path,
        tools=_tool_names(body),
        results=_results(body),
        stream=method == "streamGenerateContent",
        model=model,
        body=body,
    )


# ---------------------------------------------------------------------------- JSON answers


def _schema_type(schema: dict[str, Any]) -> str:
    """The schema's type in lower case, the first that is not null."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if str(k).lower() != "null"), "null")
    if kind is None:
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
        return "string"
    return str(kind).lower()


def fit(schema: Any) -> Any:
    """A small value that fits `schema` (a JSON Schema or the Gemini API's OpenAPI
    subset, with `OBJECT`, `STRING`, ... in capitals)."""
    if not isinstance(schema, dict):
        return "ok"
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        options = schema["enum"]
        return next((o for o in ENUM_PREFERENCES if o in options), options[0])
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return fit(schema[key][0])
    kind = _schema_type(schema)
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: fit(sub) for name, sub in props.items()}
    if kind == "array":
        count = int(schema.get("minItems") or 0)
        return [fit(schema.get("items")) for _ in range(count)]
    if kind == "integer":
        # A count or a score: gemini-cli's router wants its complexity score in 1..100.
        return int(schema.get("minimum", 1))
    if kind == "number":
        # A confidence: 0 (gemini-cli's loop detection: not looping).
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "ok".ljust(int(schema.get("minLength") or 0), ".")


def _wants_json(body: dict[str, Any]) -> tuple[bool, Any]:
    """Whether the request asks for a JSON answer, and to which schema (or None)."""
    config = body.get("generationConfig") or {}
    mime = str(config.get("responseMimeType") or "")
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or config.get("response_json_schema")
    return mime.startswith("application/json") or schema is not None, schema


# ---------------------------------------------------------------------------- answers


def _tokens(value: Any) -> int:
    """A rough token count: four bytes of JSON a token."""
    return max(1, len(json.dumps(value)) // 4)


def _usage(body: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """`usageMetadata` in Google's field order; in a stream each chunk counts the output
    so far."""
    prompt = _tokens(body.get("contents") or []) + _tokens(body.get("tools") or []) + _tokens(body.get("systemInstruction") or "")
    out = _tokens(parts)
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": out,
        "totalTokenCount": prompt + out,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }


def _chunk(body: dict[str, Any], parts: list[dict[str, Any]], so_far: list[dict[str, Any]], finish: bool, model: str, response_id: str) -> dict[str, Any]:
    """One GenerateContentResponse, keys in the order Google sends them."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish:
        candidate["finishReason"] = "STOP"
    candidate["index"] = 0
    if finish and any("functionCall" in p for p in so_far):
        candidate["finishMessage"] = "Model generated function call(s)."
    return {"candidates": [candidate], "usageMetadata": _usage(body, so_far), "modelVersion": model, "responseId": response_id}


def _dumps(obj: Any, indent: int | None = None) -> str:
    """JSON as Google writes it: `"key": value`, members joined by a bare comma when on
    one line, UTF-8 as is, and <, > and & escaped as \\u003c, \\u003e, \\u0026."""
    text = json.dumps(obj, ensure_ascii=False, indent=indent, separators=(",", ": "))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _send_json(handler: BaseHTTPRequestHandler, obj: Any) -> None:
    """A whole answer, pretty-printed with two spaces as Google's REST front end does."""
    data = _dumps(obj, indent=2).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json; charset=UTF-8")
    handler.send_header("Vary", "Origin, X-Origin, Referer")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


def _send_stream(handler: BaseHTTPRequestHandler, chunks: list[dict[str, Any]]) -> None:
    """`text/event-stream` as Google sends it: chunked, `data: ` and one JSON line a
    chunk, CRLF CRLF after each, no `event:` or `id:` lines and no closing sentinel."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Content-Disposition", "attachment")
    handler.send_header("Vary", "Origin, X-Origin, Referer")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for chunk in chunks:
        frame = ("data: " + _dumps(chunk) + "\r\n\r\n").encode()
        handler.wfile.write(f"{len(frame):x}\r\n".encode() + frame + b"\r\n")
        handler.wfile.flush()
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def respond(handler: BaseHTTPRequestHandler, parsed: Parsed, step: Step, tool_name: str | None) -> None:
    """Answers with the step: a functionCall of `tool_name`, or the text (JSON fitting
    the schema when the request asks for JSON), streamed when the request streams."""
    model, method = _route(parsed.path)
    body = parsed.body
    if method == "countTokens":
        request = body.get("generateContentRequest") or body
        total = _tokens(request.get("contents") or [])
        _send_json(handler, {"totalTokens": total, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": total}]})
        return
    response_id = secrets.token_urlsafe(17)[:23]
    if step.tool and tool_name:
        # Gemini 2.5 and 3 models sign the first function call of a turn.
        signature = base64.b64encode(secrets.token_bytes(48)).decode()
        parts: list[dict[str, Any]] = [{"functionCall": {"name": tool_name, "args": step.args}, "thoughtSignature": signature}]
    else:
        wants_json, schema = _wants_json(body)
        text = json.dumps(fit(schema) if schema is not None else {}) if wants_json else (step.text or "")
        parts = [{"text": text}]
    if not parsed.stream:
        _send_json(handler, _chunk(body, parts, parts, True, model, response_id))
        return
    chunks: list[dict[str, Any]] = []
    text = parts[0].get("text")
    if text and len(text) > 1:
        # Text streams in pieces; the last one carries the finish reason.
        half = len(text) // 2
        first = [{"text": text[:half]}]
        chunks.append(_chunk(body, first, first, False, model, response_id))
        parts = [{"text": text[half:]}]
    chunks.append(_chunk(body, parts, [{"text": text}] if text else parts, True, model, response_id))
    _send_stream(handler, chunks)
