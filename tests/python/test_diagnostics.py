"""Diagnostics after an edit from the outside (docs/diagnostics.md), through the
official MCP Python SDK client over stdio (`toolbelt mcp`) and the JSON API of
`toolbelt serve`: the same new-error block in an MCP tools/call result's text and in
`POST /v1/tools/edit_file`'s data, and basedpyright as a real language server: a
wrong return type is one new error within the budget once the server is warm, and
the fixing edit says 1 fixed, 0 new.

ruff and basedpyright come from this virtual environment (requirements.txt).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from serving import binary_from_env, free_port, toolbelt_serve

CALL_TIMEOUT_S = 120.0
BIN = Path(sys.executable).parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def toolbelt_bin() -> str:
    return binary_from_env()


class Place:
    """A workspace, its state directory, and a config file beside it (the person's
    own: nothing to trust)."""

    def __init__(self, tmp_path: Path, config: str) -> None:
        self.root = tmp_path / "ws"
        self.root.mkdir()
        self.state = tmp_path / "state"
        self.config = tmp_path / "toolbelt.toml"
        self.config.write_text(config)
        self.env = {
            **os.environ,
            "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
            "RUST_LOG": "warn",
            "XDG_CONFIG_HOME": str(tmp_path / "config-home"),
            "XDG_STATE_HOME": str(tmp_path / "state-home"),
        }

    def argv(self, *args: str) -> list[str]:
        return ["--config", str(self.config), "--root", str(self.root), "--state-dir", str(self.state), *args]

    def stdio(self, toolbelt_bin: str) -> Client:
        params = StdioServerParameters(command=toolbelt_bin, args=self.argv("mcp"), env=self.env, cwd=str(self.root))
        return Client(params, read_timeout_seconds=CALL_TIMEOUT_S)


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


RUFF = """
[lint.python]
command = ["ruff", "check", "--output-format=json", "{path}"]
parser = "ruff-json"
"""

SOURCE = "import os\n\n\ndef f():\n    return os.sep\n"


@pytest.mark.anyio
async def test_the_new_error_block_over_mcp_stdio(toolbelt_bin: str, tmp_path: Path) -> None:
    place = Place(tmp_path, RUFF)
    (place.root / "x.py").write_text(SOURCE)
    async with place.stdio(toolbelt_bin) as client:
        await client.call_tool("read_file", {"path": "x.py"})
        result = await client.call_tool("edit_file", {"path": "x.py", "old_string": "def f():", "new_string": "def f(:"})
    text = text_of(result)
    assert not result.is_error, text
    assert "Problems after this change: 1 new error" in text, text
    assert "x.py:4:7 error invalid-syntax" in text, text
    found = result.structured_content["data"]["diagnostics"]
    assert found[0]["new"] is True and found[0]["source"] == "ruff", found


def post(base: str, token: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as r:
        return json.loads(r.read())


def test_the_new_error_block_in_the_json_api(toolbelt_bin: str, tmp_path: Path) -> None:
    place = Place(tmp_path, RUFF)
    (place.root / "x.py").write_text(SOURCE)
    token = secrets.token_hex(24)
    argv = [toolbelt_bin, *place.argv("serve", "--bind", f"127.0.0.1:{free_port()}", f"--token={token}")]
    with toolbelt_serve(argv, place.env, tmp_path / "serve.log", token) as (base, _proc):
        post(base, token, "/v1/tools/read_file", {"path": "x.py"})
        env = post(base, token, "/v1/tools/edit_file", {"path": "x.py", "old_string": "def f():", "new_string": "def f(:"})
    assert env["status"] == "success", env
    found = env["data"]["diagnostics"]
    assert len(found) == 1 and found[0]["line"] == 4 and found[0]["code"] == "invalid-syntax", found
    assert env["data"]["diagnostics_summary"]["new"] == 1, env
    assert "1 new error" in env["text"], env["text"]


PYRIGHT = """
[diagnostics]
budget_ms = 3000
[lsp.python]
command = ["basedpyright-langserver", "--stdio"]
root_markers = ["pyproject.toml"]
"""


@pytest.mark.anyio
async def test_basedpyright_reports_a_wrong_return_type_once_warm_and_its_fix(toolbelt_bin: str, tmp_path: Path) -> None:
    place = Place(tmp_path, PYRIGHT)
    (place.root / "pyproject.toml").write_text("[project]\nname = 'x'\nversion = '0'\n")
    for i in range(9):
        (place.root / f"m{i}.py").write_text(f"def g{i}(a: int) -> int:\n    return a + {i}\n")
    (place.root / "x.py").write_text("def f(a: int) -> int:\n    return a\n")
    async with place.stdio(toolbelt_bin) as client:
        await client.call_tool("read_file", {"path": "x.py"})
        # Warm the server: the first edits may find it starting (pending).
        deadline = time.monotonic() + 90
        while True:
            warm = await client.call_tool("edit_file", {"path": "x.py", "old_string": "return a", "new_string": "return a  "})
            assert not warm.is_error, text_of(warm)
            await client.call_tool("edit_file", {"path": "x.py", "old_string": "return a  ", "new_string": "return a"})
            if "pending" not in text_of(warm):
                break
            assert time.monotonic() < deadline, text_of(warm)
        started = time.monotonic()
        broken = await client.call_tool("edit_file", {"path": "x.py", "old_string": "-> int:", "new_string": "-> str:"})
        took = time.monotonic() - started
        text = text_of(broken)
        assert "1 new error" in text and "reportReturnType" in text, text
        assert took < 3.0 + 1.0, took
        fixed = await client.call_tool("edit_file", {"path": "x.py", "old_string": "-> str:", "new_string": "-> int:"})
        text = text_of(fixed)
        assert "0 new errors (1 fixed" in text, text
