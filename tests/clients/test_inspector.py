"""The MCP Inspector's CLI (`@modelcontextprotocol/inspector`, pinned in package.json)
drives toolbelt over stdio and streamable HTTP, and runs the README's Cursor and VS Code
blocks (neither editor can be installed here).

No model is involved: the Inspector calls the tools itself, one method per process
(`--cli --method tools/list`, `--method tools/call --tool-name X --tool-args-json J`;
each tools/call lists the tools first, to find the tool's schemas). It runs on Node 22
(`Clients.node`). What it checks, and where (clients/cli/build/index.js of the package):

- `initialize` carries clientInfo {"name": "inspector-cli", "version": "2.12.0"}
  (CLI_CLIENT_NAME, and the version read from the package's package.json).
- A result with `structuredContent` is validated against the tool's `outputSchema`
  (`validateToolOutput`): ajv's Ajv2020 engine (the schema declares no `$schema`) with
  `strict: false, validateFormats: true, validateSchema: false, allErrors: true` and
  ajv-formats (the SDK's AjvJsonSchemaValidator, @modelcontextprotocol/client 2.3.1). A
  result that does not validate is an error: exit 1, `{"error": {"code": "error",
  "message": "data/data must have required property 'kind', ..."}}` on stderr, nothing
  on stdout; an isError result without structuredContent is not checked.
- A result with `isError: true` exits 5 (`tool_is_error`), the result on stdout and
  `{"error": {"code": "tool_is_error", ...}}` on stderr: the Inspector's exit-code
  map, not a failure of toolbelt's.
- `tools/list` lints the tool schemas (`lintToolSchemas`) and prints on stderr
  `Schema portability: 0 errors, N warnings across M tools. Re-run with --strict for
  details.`; with `--strict` each finding in full (`Warning: tool "..."`, its path,
  issue and suggestion), and exit 6 when one is an error. A `"type": [X, "null"]`
  is a `type-union` warning.

toolbelt serves the Inspector, a client that reads the data, its tools' outputSchema and
the envelope as structuredContent (`--structured-content auto`), so that check runs.
Every call must exit as said and print nothing else on stderr: no schema warning, no
validation error, and nothing from toolbelt itself (a stdio server's stderr is the
Inspector's). The Inspector's own notice about this machine's missing OS keychain is
kept away with an encrypted secrets file (`MCP_INSPECTOR_SECRET_STORE=file` and a key).

The README's blocks: the Inspector's `--config FILE --server toolbelt` reads Cursor's
`mcpServers` format, but takes an entry without `type` for a stdio one (a `url` entry
fails: `The "file" argument must be of type string`), does not resolve `${env:NAME}`,
and refuses VS Code's `servers` ("must contain an mcpServers element"). So Cursor's
stdio block runs through `--config` as it is, and the others are mapped field by field
onto the command line (`command`/`args` after `--`; `url` to `--server-url`, `headers`
to `--header`), with `${env:NAME}` resolved from the environment as both editors do.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import GREP_MARKER, READ_MARKER, Clients, Served, fill, readme_block, run_group

INSPECTOR_TIMEOUT_S = 120
# The Inspector's exit codes (EXIT_CODES in its CLI).
EXIT_OK = 0
EXIT_TOOL_ERROR = 5
TOOL_ERROR_ENVELOPE = {"error": {"code": "tool_is_error", "message": "Tool 'read_file' returned isError:true."}}
# toolbelt's default (`--structured-content auto`) serves the Inspector the envelope as
# structuredContent and the tools' outputSchema, so the Inspector checks one against the
# other; without them that check, the point of this client, would check nothing.
STRUCTURED_WHY = "toolbelt did not serve the Inspector (clientInfo inspector-cli) its structured data"


def clip(text: str, head: int = 2500, tail: int = 600) -> str:
    """`text`, its middle left out when it is long."""
    return text if len(text) <= head + tail else f"{text[:head]}\n[... {len(text) - head - tail} chars ...]\n{text[-tail:]}"


@dataclass
class Run:
    """One Inspector process: what it was asked, its exit code and output."""

    what: str
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return f"{self.what}: exit {self.returncode}\n  argv: {' '.join(self.argv[2:])}\n  stdout: {self.stdout[:800]}\n  stderr: {clip(self.stderr)}"

    def result(self) -> dict[str, Any]:
        """The JSON result the Inspector printed on stdout."""
        return json.loads(self.stdout)


def inspector_env(clients: Clients, home: Path, **extra: str) -> dict[str, str]:
    """The client environment, with the Inspector's secrets in an encrypted file of its
    own HOME: without a keychain it would otherwise pick one and say so on stderr."""
    return clients.env(home, MCP_INSPECTOR_SECRET_STORE="file", MCP_INSPECTOR_SECRET_KEY=secrets.token_hex(16), **extra)


def run_inspector(clients: Clients, env: dict[str, str], what: str, method: list[str], target: list[str]) -> Run:
    """`inspector --cli METHOD... TARGET...` once, in its own process group (killed whole
    at the end: the stdio server with it). The target comes last: `--header` takes all
    the values that follow it, and `--` ends the Inspector's options before a command."""
    argv = [clients.node, clients.bin("inspector"), "--cli", *method, *target]
    run = run_group(argv, cwd=None, env=env, timeout=INSPECTOR_TIMEOUT_S)
    return Run(what, argv, run.returncode, run.stdout, run.stderr)


def list_tools() -> list[str]:
    """The Inspector's arguments for tools/list."""
    return ["--method", "tools/list"]


def call_tool(name: str, **args: Any) -> list[str]:
    """The Inspector's arguments for a tools/call (the arguments as JSON, not coerced)."""
    return ["--method", "tools/call", "--tool-name", name, "--tool-args-json", json.dumps(args)]


def texts(result: dict[str, Any]) -> str:
    """The text content of a tool result."""
    return "\n".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")


def stdio_target(root: Path) -> list[str]:
    """`toolbelt mcp` on `root` with the coding tools, as the Inspector's server command."""
    return ["--", "toolbelt", "mcp", "--root", str(root), "--tools", "coding"]


def http_target(url: str, headers: dict[str, str]) -> list[str]:
    """The streamable HTTP server at `url`, sent `headers` with every request."""
    sent = [f"{k}: {v}" for k, v in headers.items()]
    return ["--transport", "http", "--server-url", url, *(["--header", *sent] if sent else [])]


# ---------------------------------------------------------------------- stdio and HTTP


def check_calls(clients: Clients, env: dict[str, str], target: list[str], transport: str, workspace: Path, coding: list[str]) -> None:
    """tools/list and the four calls, each in its own Inspector process; all problems
    are reported together."""
    problems: list[str] = []

    def expect(run: Run, ok: bool, why: str) -> None:
        if not ok:
            problems.append(f"{why}\n{run.describe()}")

    def clean(run: Run, code: int = EXIT_OK, stderr: dict[str, Any] | None = None) -> bool:
        """Exited with `code`, and stderr holds nothing (or only the expected envelope)."""
        expect(run, run.returncode == code, f"exit {run.returncode}, not {code}")
        said = run.stderr.strip()
        if stderr is None:
            expect(run, not said, "the Inspector printed on stderr")
        else:
            try:
                same = json.loads(said) == stderr
            except json.JSONDecodeError:
                same = False
            expect(run, same, f"stderr is not just {json.dumps(stderr)}")
        return run.returncode == code and run.stdout.lstrip().startswith("{")

    # --strict prints each schema finding in full: the failure names the paths.
    run = run_inspector(clients, env, f"inspector/{transport}: tools/list", ["--strict", *list_tools()], target)
    if clean(run):
        tools = run.result()["tools"]
        names = sorted(t["name"] for t in tools)
        expect(run, names == coding, f"tools offered {names}, not the coding set {coding}")
        bare = [t["name"] for t in tools if "outputSchema" not in t]
        expect(run, not bare, f"{STRUCTURED_WHY}: tools without outputSchema {bare}")

    run = run_inspector(clients, env, f"inspector/{transport}: read_file hello.txt", call_tool("read_file", path="hello.txt"), target)
    if clean(run):
        expect(run, READ_MARKER in texts(run.result()), "the file's content is not in the text")
        expect(run, "structuredContent" in run.result(), f"{STRUCTURED_WHY}: no structuredContent")

    run = run_inspector(clients, env, f"inspector/{transport}: grep", call_tool("grep", pattern="GREP-MARKER-[0-9]+"), target)
    if clean(run):
        text = texts(run.result())
        expect(run, GREP_MARKER in text and "src/lib.rs" in text, "grep's matches are not in the text")
        expect(run, "structuredContent" in run.result(), f"{STRUCTURED_WHY}: no structuredContent")

    # A tool error exits 5 by the Inspector's exit-code map, the result on stdout.
    run = run_inspector(clients, env, f"inspector/{transport}: read_file helo.txt", call_tool("read_file", path="helo.txt"), target)
    if clean(run, EXIT_TOOL_ERROR, TOOL_ERROR_ENVELOPE):
        result = run.result()
        text = texts(result)
        expect(run, result.get("isError") is True, "the error result is not isError")
        expect(run, "did you mean" in text.lower() and "hello.txt" in text, "the error does not suggest hello.txt")

    run = run_inspector(clients, env, f"inspector/{transport}: read_file pixel.png", call_tool("read_file", path="pixel.png"), target)
    if clean(run):
        images = [c for c in run.result().get("content", []) if c.get("type") == "image"]
        expect(run, len(images) == 1 and images[0].get("mimeType") == "image/png", f"not one image/png block: {images}")
        expect(run, "structuredContent" in run.result(), f"{STRUCTURED_WHY}: no structuredContent")
        if images:
            data = base64.b64decode(images[0].get("data", ""))
            expect(run, data == (workspace / "pixel.png").read_bytes(), "the image's bytes are not the file's")

    if problems:
        pytest.fail(f"inspector/{transport}: {len(problems)} problem(s)\n\n" + "\n\n".join(problems), pytrace=False)


def test_inspector_stdio(clients: Clients, home: Path, workspace: Path, coding_tools: list[str]) -> None:
    check_calls(clients, inspector_env(clients, home), stdio_target(workspace), "stdio", workspace, coding_tools)


def test_inspector_http(clients: Clients, home: Path, workspace: Path, served: Served, coding_tools: list[str]) -> None:
    target = http_target(served.url, {"Authorization": f"Bearer {served.token}"})
    check_calls(clients, inspector_env(clients, home), target, "http", workspace, coding_tools)


# ---------------------------------------------------------------------- the README's Cursor and VS Code blocks


ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


def resolve_env(value: Any, env: dict[str, str]) -> Any:
    """`${env:NAME}` replaced in every string, as Cursor and VS Code do when they read
    their mcp.json; an unset NAME fails the test."""
    if isinstance(value, str):

        def one(m: re.Match[str]) -> str:
            assert m.group(1) in env, f"${{env:{m.group(1)}}} is not set for the client"
            return env[m.group(1)]

        return ENV_REF.sub(one, value)
    if isinstance(value, list):
        return [resolve_env(v, env) for v in value]
    if isinstance(value, dict):
        return {k: resolve_env(v, env) for k, v in value.items()}
    return value


def block_target(name: str, config: dict[str, Any], env: dict[str, str], home: Path) -> list[str]:
    """The Inspector's command line for a README block: `--config` for what it reads as
    it is (an `mcpServers` stdio entry with nothing to resolve), else the block's fields."""
    editor = name.split("-")[0]
    key = "mcpServers" if editor == "cursor" else "servers"
    assert list(config) == [key], f"{name}: the block's top-level keys are {list(config)}, not [{key!r}]"
    entry = config[key]["toolbelt"]
    if editor == "vscode":
        assert entry.get("type") in ("stdio", "http"), f"{name}: VS Code needs the server's type: {entry}"
    if editor == "cursor" and "command" in entry and not ENV_REF.search(json.dumps(entry)):
        path = home / ".cursor" / "mcp.json"  # where Cursor reads it for every project
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=2))
        return ["--config", str(path), "--server", "toolbelt"]
    entry = resolve_env(entry, env)
    if "command" in entry:
        extra = [f"{k}={v}" for k, v in entry.get("env", {}).items()]
        return [*(x for kv in extra for x in ("-e", kv)), "--", entry["command"], *entry.get("args", [])]
    return http_target(entry["url"], entry.get("headers", {}))


@pytest.mark.parametrize("name", ["cursor-stdio", "cursor-http", "vscode-stdio", "vscode-http"])
def test_readme_block(name: str, request: pytest.FixtureRequest, clients: Clients, home: Path, workspace: Path, coding_tools: list[str]) -> None:
    """The block lists the coding tools and reads a file. Schema warnings are the
    business of the tests above: here stderr is only shown."""
    if name.endswith("-http"):
        served: Served = request.getfixturevalue("served")
        block = fill(readme_block(name), root=workspace, url=served.url)
        env = inspector_env(clients, home, TOOLBELT_TOKEN=served.token)
        assert served.token not in block
    else:
        block = fill(readme_block(name), root=workspace)
        env = inspector_env(clients, home)
    target = block_target(name, json.loads(block), env, home)

    run = run_inspector(clients, env, f"{name}: tools/list", list_tools(), target)
    assert run.returncode == EXIT_OK, run.describe()
    names = sorted(t["name"] for t in run.result()["tools"])
    assert names == coding_tools, f"{name}: tools offered {names}, not the coding set\n{run.describe()}"

    run = run_inspector(clients, env, f"{name}: read_file hello.txt", call_tool("read_file", path="hello.txt"), target)
    assert run.returncode == EXIT_OK, run.describe()
    assert READ_MARKER in texts(run.result()), run.describe()
