"""toolbelt as a client of the MCP reference server `@modelcontextprotocol/server-everything`
(the TypeScript SDK's, pinned in package.json), over stdio and streamable HTTP: its tools
listed and called through `toolbelt call`, their content kinds mapped into envelopes, its
resources read through `mcp_resource`, its schemas exported for every model API, and its
tools re-served by the `toolbelt mcp` gateway to the official Python SDK client."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from conftest import Clients
from mcp import Client, StdioServerParameters
from serving import free_port


def everything_js(clients: Clients) -> str:
    return str(clients.prefix / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js")


def workspace(tmp_path: Path, config: str) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "toolbelt.toml").write_text(config)
    (tmp_path / "config").mkdir()
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "RUST_LOG": "warn"}
    return root, env


def trust(toolbelt_bin: str, root: Path, env: dict[str, str]) -> None:
    """The workspace's servers, as configured now, are trusted (`toolbelt hooks trust`)."""
    subprocess.run(
        [toolbelt_bin, "--root", str(root), "--state-dir", str(root / ".state"), "hooks", "trust", "--yes"],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )


def call(toolbelt_bin: str, root: Path, env: dict[str, str], tool: str, args: dict[str, Any]) -> dict[str, Any]:
    trust(toolbelt_bin, root, env)
    proc = subprocess.run(
        [toolbelt_bin, "--root", str(root), "--state-dir", str(root / ".state"), "call", tool, json.dumps(args), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_server_everything_over_stdio(toolbelt_bin: str, clients: Clients, tmp_path: Path) -> None:
    root, env = workspace(
        tmp_path,
        f'[mcp_servers.everything]\ncommand = {json.dumps(clients.node)}\nargs = [{json.dumps(everything_js(clients))}, "stdio"]\n',
    )
    trust(toolbelt_bin, root, env)
    listed = subprocess.run(
        [toolbelt_bin, "--root", str(root), "tools", "--json", "--category", "remote"],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    )
    names = {t["name"] for t in json.loads(listed.stdout)}
    assert {"everything__echo", "everything__get-sum", "everything__get-tiny-image", "mcp_resource"} <= names, names

    assert call(toolbelt_bin, root, env, "everything__echo", {"message": "hi"})["text"] == "Echo: hi"
    image = call(toolbelt_bin, root, env, "everything__get-tiny-image", {})
    assert image["data"]["image"]["mime_type"] == "image/png" and "[image: image/png" in image["text"]
    links = call(toolbelt_bin, root, env, "everything__get-resource-links", {"count": 2})
    assert [b["type"] for b in links["data"]["content"]].count("resource_link") == 2, links
    structured = call(toolbelt_bin, root, env, "everything__get-structured-content", {"location": "Chicago"})
    assert "temperature" in structured["data"]["structured"], structured
    bad = call(toolbelt_bin, root, env, "everything__get-sum", {"a": "two", "b": 3})
    assert bad["error"]["code"] == "INVALID_PARAMS", bad

    resources = call(toolbelt_bin, root, env, "mcp_resource", {"action": "list"})
    uri = resources["data"]["resources"][0]["uri"]
    read = call(toolbelt_bin, root, env, "mcp_resource", {"action": "read", "server": "everything", "uri": uri})
    assert read["status"] == "success" and f"[resource {uri}" in read["text"], read

    for fmt in ["openai-strict", "gemini", "anthropic", "openai-responses"]:
        out = subprocess.run(
            [toolbelt_bin, "--root", str(root), "schema", "--format", fmt],
            capture_output=True, text=True, env=env, timeout=120,
        )
        assert out.returncode == 0 and "everything__gzip-file-as-resource" in out.stdout, (fmt, out.stderr)

    # The gateway: the official Python SDK client sees built-in and upstream tools.
    async def gateway() -> None:
        params = StdioServerParameters(
            command=toolbelt_bin, args=["--root", str(root), "--state-dir", str(root / ".state"), "mcp"], env=env
        )
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert {"read_file", "everything__echo"} <= tools
            result = await client.call_tool("everything__get-sum", {"a": 40, "b": 2})
            assert "42" in result.content[0].text

    anyio.run(gateway)


@contextmanager
def everything_http(clients: Clients) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [clients.node, everything_js(clients), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "server-everything did not listen"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_server_everything_over_streamable_http(toolbelt_bin: str, clients: Clients, tmp_path: Path) -> None:
    with everything_http(clients) as url:
        root, env = workspace(tmp_path, f"[mcp_servers.ev]\nurl = {json.dumps(url)}\n")
        assert call(toolbelt_bin, root, env, "ev__echo", {"message": "over http"})["text"] == "Echo: over http"
        annotated = call(toolbelt_bin, root, env, "ev__get-annotated-message", {"messageType": "error", "includeImage": True})
        assert "Error" in annotated["text"] and annotated["data"]["image"]["mime_type"] == "image/png", annotated
