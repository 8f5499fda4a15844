"""An MCP server built with the official Python SDK (`MCPServer`, formerly FastMCP):
the "other server" whose tools toolbelt offers in the upstream tests.

    python upstream_server.py stdio
    python upstream_server.py http PORT

Its tools cover what a client must handle: every kind of content block, structured
output, an error, a long text, a call that hangs (and notes when it is cancelled), a
crash, and a tool list that changes. UPSTREAM_MARKS names a directory where it
leaves marks the tests read (its pid, cancellations).
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

server = MCPServer("upstream-test")
marks = Path(os.environ.get("UPSTREAM_MARKS", "."))


def mark(name: str, text: str) -> None:
    marks.mkdir(parents=True, exist_ok=True)
    (marks / name).write_text(text)


mark("pid", str(os.getpid()))
print("upstream test server starting", file=sys.stderr, flush=True)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Returns the text it is given."""
    return text


@server.tool()
def touch(name: str) -> str:
    """Creates the marker NAME in UPSTREAM_MARKS (a call that changes something)."""
    mark(name, "touched")
    return f"touched {name}"


@server.tool()
def add(a: int, b: int) -> dict[str, int]:
    """Adds two numbers; the sum is structured output."""
    return {"sum": a + b}


@server.tool()
def long_text(lines: int) -> str:
    """Returns that many numbered lines."""
    return "\n".join(f"line {i} of the long text" for i in range(1, lines + 1))


@server.tool()
def picture() -> Image:
    """Returns a small PNG."""
    return Image(data=PNG, format="png")


@server.tool(structured_output=False)
def kinds() -> list:
    """Returns one content block of every kind."""
    return [
        TextContent(type="text", text="plain words"),
        ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png"),
        AudioContent(type="audio", data=base64.b64encode(b"RIFF0000WAVE").decode(), mime_type="audio/wav"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(uri="file:///notes.txt", mime_type="text/plain", text="embedded notes"),
        ),
        EmbeddedResource(
            type="resource",
            resource=BlobResourceContents(
                uri="file:///data.bin", mime_type="application/octet-stream", blob=base64.b64encode(b"\0" * 300).decode()
            ),
        ),
        ResourceLink(type="resource_link", uri="file:///big.log", name="big.log", description="the full log"),
    ]


@server.tool()
def fail(why: str) -> str:
    """Always fails, saying why."""
    raise ToolError(f"it failed: {why}")


@server.tool()
async def hang(seconds: float) -> str:
    """Sleeps; notes when the call is cancelled."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark("cancelled", "hang")
        raise
    return "woke up"


@server.tool()
def crash() -> str:
    """Ends the server's process at once."""
    os._exit(3)


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `late` and says the tool list changed."""

    def late() -> str:
        """A tool that did not exist at the start."""
        return "late and here"

    server.add_tool(late)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
def secret_env() -> str:
    """Says whether UPSTREAM_SECRET reached the server (not its value)."""
    return "set" if os.environ.get("UPSTREAM_SECRET") else "unset"


@server.resource("notes://readme", name="readme", description="What the project is", mime_type="text/markdown")
def readme() -> str:
    return "# The project\nIt counts words."


@server.prompt(description="Ask for a review of one topic")
def review(topic: str) -> str:
    return f"Please review {topic} carefully."


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
