#!/usr/bin/env python3
"""Runs one scripted coding task through `toolbelt agent` and through Claude Code.

Both agents talk to the same scripted model provider on 127.0.0.1 (the
`scripted_provider` example of toolbelt-agent), which answers every model request
at once from a script: the same steps for both (find the files, read, grep, run the
failing tests, edit the bug, run the tests again, ...), so what is measured is the
agent itself: its start, its loop, its request building and stream parsing, its
tools, and its memory.

Each run gets a fresh copy of the fixture project (a small Python module with a bug
and its unittest tests) and its own provider process. The agents take turns: round
after round, each runs once, so a noisy stretch of a shared machine falls on both.

Measured per run (the agent's process and everything it starts):
  - wall time from spawn to exit; CPU time (user + system of the tree, from wait4);
  - steps: model requests that used up a reply of the script (requests with tools);
    side requests (without tools, e.g. title generation) are counted apart;
  - the agent's event stream (toolbelt --json, Claude Code stream-json), each line
    stamped as it arrives: the first and last event, and the tool phases (per step,
    first tool call to last tool result); for toolbelt also its tools' own time_ms;
  - a final-answer-only run per round (start, one request, exit), so that
    (task - answer) / extra steps is the cost of a step without start and exit;
  - the provider's own share: the run's recorded requests replayed from Python;
  - peak RSS of the agent process (GNU time %M; wait4's ru_maxrss would include this
    Python process's RSS, carried over the exec after vfork), and of the process tree:
    a sampler thread reads /proc every 10 ms, finds the descendants (by parent pid, and
    by session id for detached ones) and sums their RSS, and every 30 ms their PSS.
A run counts only when the fixture ends fixed (calc.py has the fix and the tests
pass when run again afterwards) and the whole script was used; otherwise the round is
reported invalid.

  bench.py --provider .../scripted_provider --toolbelt .../toolbelt --claude .../claude [--rounds 5]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TARGET_OVERHEAD_MS = 1.0
TARGET_RSS_RATIO = 5.0
PAGE = os.sysconf("SC_PAGE_SIZE")
GNU_TIME = "/usr/bin/time"

PROMPT = (
    "The tests in this project fail. Find the bug in calc.py, fix it, and run the "
    "tests to check."
)

# ---------------------------------------------------------------------------
# The fixture: a small Python project with one bug (mean divides by n - 1).

CALC_PY = '''\
"""Small statistics helpers."""

from __future__ import annotations

from typing import Iterable


def total(values: Iterable[float]) -> float:
    """The sum of the values."""
    result = 0.0
    for value in values:
        result += value
    return result


def mean(values: list[float]) -> float:
    """The arithmetic mean of a non-empty list."""
    if not values:
        raise ValueError("mean of an empty list")
    return total(values) / (len(values) - 1)


def median(values: list[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count)."""
    if not values:
        raise ValueError("median of an empty list")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def spread(values: list[float]) -> float:
    """The largest value minus the smallest."""
    return max(values) - min(values)
'''

BUG_LINE = "    return total(values) / (len(values) - 1)\n"
FIX_LINE = "    return total(values) / len(values)\n"

TEST_CALC_PY = '''\
import unittest

import calc


class TotalTest(unittest.TestCase):
    def test_total(self):
        self.assertEqual(calc.total([1, 2, 3]), 6)

    def test_empty(self):
        self.assertEqual(calc.total([]), 0)


class MeanTest(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(calc.mean([1, 2, 3, 4]), 2.5)

    def test_single(self):
        self.assertEqual(calc.mean([7]), 7)

    def test_empty(self):
        with self.assertRaises(ValueError):
            calc.mean([])


class MedianTest(unittest.TestCase):
    def test_odd(self):
        self.assertEqual(calc.median([3, 1, 2]), 2)

    def test_even(self):
        self.assertEqual(calc.median([4, 1, 3, 2]), 2.5)


class SpreadTest(unittest.TestCase):
    def test_spread(self):
        self.assertEqual(calc.spread([5, 1, 9]), 8)


if __name__ == "__main__":
    unittest.main()
'''

REPORT_PY = '''\
"""Prints a summary of numbers given on the command line."""

import sys

import calc


def main(argv: list[str]) -> int:
    values = [float(a) for a in argv]
    if not values:
        print("usage: report.py NUMBER...", file=sys.stderr)
        return 2
    print(f"n={len(values)} mean={calc.mean(values):g} median={calc.median(values):g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
'''

README_MD = '''\
# calc

Small statistics helpers (`calc.py`) and a command-line summary (`report.py`).

Run the tests with `python3 -m unittest -v`.
'''

FIXTURE = {
    "README.md": README_MD,
    "calc.py": CALC_PY,
    "test_calc.py": TEST_CALC_PY,
    "report.py": REPORT_PY,
}

TEST_COMMAND = "python3 -B -m unittest -q 2>&1 | tail -n 5"

# ---------------------------------------------------------------------------
# The script: one list of steps, written with Claude Code's tool and argument names;
# `adapt` renames arguments for an agent whose tools take other names. Each step is
# one model reply: its tool calls (parallel when more than one). `{root}` is the
# fixture copy's absolute path.

STEPS: list[list[tuple[str, dict[str, Any]]]] = [
    [("Glob", {"pattern": "**/*.py", "path": "{root}"})],
    [("Read", {"file_path": "{root}/README.md"})],
    [("Bash", {"command": TEST_COMMAND, "description": "Run the tests"})],
    [("Grep", {"pattern": "def mean", "path": "{root}", "output_mode": "content", "-n": True})],
    [("Read", {"file_path": "{root}/calc.py"})],
    [("Read", {"file_path": "{root}/test_calc.py"})],
    [("Grep", {"pattern": "mean\\(", "path": "{root}", "output_mode": "files_with_matches"})],
    [("Read", {"file_path": "{root}/report.py"})],
    [("Grep", {"pattern": "len\\(values\\)", "path": "{root}", "glob": "*.py", "output_mode": "content", "-n": True})],
    [("Edit", {"file_path": "{root}/calc.py", "old_string": BUG_LINE.strip("\n"), "new_string": FIX_LINE.strip("\n")})],
    [("Bash", {"command": TEST_COMMAND, "description": "Run the tests again"})],
    [("Read", {"file_path": "{root}/calc.py", "offset": 15, "limit": 8})],
    [("Bash", {"command": "python3 -B report.py 1 2 3 4", "description": "Try the report"})],
    [
        ("Grep", {"pattern": "TODO|FIXME", "path": "{root}", "output_mode": "count"}),
        ("Glob", {"pattern": "*.md", "path": "{root}"}),
    ],
]
FINAL_ANSWER = (
    "Fixed: `mean` in calc.py divided the total by `len(values) - 1` instead of "
    "`len(values)`. All 8 tests pass now."
)


def tool_schemas_of_toolbelt(toolbelt: str) -> dict[str, dict[str, Any]]:
    """Tool name -> input schema properties, as `toolbelt --profile claude` serves them."""
    out = subprocess.run(
        [toolbelt, "--profile", "claude", "schema", "-f", "anthropic"],
        check=True,
        capture_output=True,
        env={**os.environ, "RUST_LOG": "off"},
    ).stdout
    tools = json.loads(out)
    if isinstance(tools, dict):
        tools = tools.get("tools", [])
    return {t["name"]: t.get("input_schema", {}).get("properties", {}) for t in tools}


def adapt(name: str, args: dict[str, Any], props: dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """`args` for a tool whose schema has `props` (None: Claude Code's own names)."""
    if props is None:
        return dict(args), []
    notes = []
    out: dict[str, Any] = {}
    for key, value in args.items():
        if key in props:
            out[key] = value
        elif key == "file_path" and "path" in props:
            out["path"] = value
            notes.append(f"{name}.file_path -> path")
        elif key == "-n":
            notes.append(f"{name}.-n dropped (line numbers are always given)")
        elif key == "-i" and "case_sensitive" in props:
            out["case_sensitive"] = not value
            notes.append(f"{name}.-i -> case_sensitive")
        elif key == "description":
            notes.append(f"{name}.description dropped")
        else:
            raise SystemExit(f"bench.py: toolbelt's {name} has no argument for {key!r}: {sorted(props)}")
    return out, notes


def make_script(
    root: Path, props: dict[str, dict[str, Any]] | None, steps: list[list[tuple[str, dict[str, Any]]]] = STEPS
) -> tuple[dict[str, Any], list[str]]:
    """The script of `steps` and the final answer; `props` as for `adapt`."""
    replies = []
    notes: list[str] = []
    for i, step in enumerate(steps, 1):
        calls = []
        for j, (name, args) in enumerate(step):
            if props is not None and name not in props:
                raise SystemExit(f"bench.py: toolbelt --profile claude has no tool {name}")
            filled = json.loads(json.dumps(args).replace("{root}", str(root)))
            adapted, n = adapt(name, filled, None if props is None else props[name])
            notes += n
            calls.append({"id": f"toolu_bench_{i:02d}_{j}", "name": name, "arguments": json.dumps(adapted)})
        replies.append({"tool_calls": calls})
    replies.append({"text": FINAL_ANSWER})
    script = {
        "kind": "anthropic",
        "replies": replies,
        "consume": "with_tools",
        "side_reply": {"text": "ok"},
        "when_done": {"text": "(the script has no more replies)"},
    }
    return script, sorted(set(notes))


# ---------------------------------------------------------------------------
# Processes and their memory.


def read_stat(pid: str) -> tuple[int, int, int, str] | None:
    """(ppid, session id, RSS bytes, command name) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: split after the last ')'.
    name = stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode(errors="replace")
    fields = stat[stat.rfind(b")") + 2 :].split()
    # fields[0] is the state (field 3); ppid is field 4, session field 6, rss field 24.
    return int(fields[1]), int(fields[3]), int(fields[21]) * PAGE, name


def read_pss(pid: int) -> int:
    """The proportional set size of a process (shared pages divided among their users)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeSampler(threading.Thread):
    """Peak memory of the descendants of `pid` (the GNU time wrapper, not counted
    itself), sampled every `interval`: the sum of their RSS every sample, and the sum
    of their PSS every `pss_every`th sample (reading smaps_rollup costs more)."""

    def __init__(self, pid: int, interval: float = 0.010, pss_every: int = 3) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.pss_every = pss_every
        self.peak = 0
        self.peak_pss = 0
        self.peak_names: list[str] = []
        self.max_procs = 0
        self.samples = 0
        self.names: set[str] = set()
        self.stop = threading.Event()

    def sample(self) -> None:
        stats = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                s = read_stat(name)
                if s is not None:
                    stats[int(name)] = s
        if self.pid not in stats:
            return
        children: dict[int, list[int]] = {}
        for pid, st in stats.items():
            children.setdefault(st[0], []).append(pid)
        tree = set()
        todo = list(children.get(self.pid, []))
        while todo:
            pid = todo.pop()
            if pid in tree:
                continue
            tree.add(pid)
            todo += children.get(pid, [])
        # Helpers the agent detached with setsid are still the agent's: the wrapper
        # was started in a session of its own, so its session id is its pid.
        tree |= {pid for pid, st in stats.items() if st[1] == self.pid and pid != self.pid}
        if not tree:
            return
        total = sum(stats[pid][2] for pid in tree)
        self.samples += 1
        self.max_procs = max(self.max_procs, len(tree))
        self.names |= {stats[pid][3] for pid in tree}
        if total > self.peak:
            self.peak = total
            self.peak_names = sorted(stats[pid][3] for pid in tree)
        if self.samples % self.pss_every == 1:
            self.peak_pss = max(self.peak_pss, sum(read_pss(pid) for pid in tree))

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval)


@dataclass
class Run:
    agent: str
    round: int
    kind: str  # "task" (the whole script) or "answer" (the final answer alone)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    top_rss: int = 0
    tree_rss: int = 0
    tree_pss: int = 0
    tree_names: str = ""
    max_procs: int = 0
    steps: int = 0
    side_requests: int = 0
    extra: int = 0
    tool_ms: float | None = None  # toolbelt's own tool_result time_ms, summed
    first_event_s: float = 0.0  # spawn to the first event on stdout (toolbelt run_started, Claude Code init)
    last_event_s: float = 0.0  # spawn to the last event (the final answer / result)
    tool_phase_s: float = 0.0  # per step, first tool call event to last tool result event, summed
    floor_s: float = 0.0  # the same model requests replayed from Python: the provider and HTTP alone
    tool_calls: int = 0
    tool_errors: int = 0
    exit_code: int = 0
    fixed: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.problems


class Provider:
    """The scripted provider for one run."""

    def __init__(self, binary: str, script: dict[str, Any], workdir: Path) -> None:
        path = workdir / "script.json"
        path.write_text(json.dumps(script, indent=1))
        self.proc = subprocess.Popen(
            [binary, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(workdir / "provider.err", "wb"),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"bench.py: the scripted provider did not start (see {workdir}/provider.err)")
        hello = json.loads(line)
        self.base_url: str = hello["base_url"]
        self.addr: str = hello["addr"]

    def requests(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://{self.addr}/_scripted/requests", timeout=10) as r:
            return json.load(r)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def provider_floor(binary: str, script: dict[str, Any], requests: list[dict[str, Any]], workdir: Path) -> float:
    """Seconds a fresh provider takes to answer `requests` (the agent's own model
    requests, bodies as recorded) sent again from Python over one keep-alive
    connection, each answer read to its end: the provider's and loopback HTTP's share
    of a step, which neither agent can go below."""
    workdir.mkdir(parents=True, exist_ok=True)
    provider = Provider(binary, script, workdir)
    try:
        host, port = provider.addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        total = 0.0
        for r in requests:
            body = json.dumps(r["body"]).encode()
            headers = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-ant-bench"}
            start = time.perf_counter()
            conn.request("POST", r["path"], body, headers)
            response = conn.getresponse()
            response.read()
            total += time.perf_counter() - start
        conn.close()
    finally:
        provider.close()
    return total


def make_fixture(root: Path) -> None:
    root.mkdir(parents=True)
    for name, text in FIXTURE.items():
        (root / name).write_text(text)


def check_fixture(root: Path) -> tuple[bool, str]:
    text = (root / "calc.py").read_text()
    if BUG_LINE in text or FIX_LINE not in text:
        return False, "calc.py is not fixed"
    test = subprocess.run(
        [sys.executable, "-m", "unittest", "-q"],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if test.returncode != 0:
        return False, "the tests fail after the run: " + test.stderr.strip().splitlines()[-1]
    return True, ""


def tool_results_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            out += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
    return out


def read_lines(stream: Any, start: float, out: list[tuple[float, bytes]]) -> None:
    """Appends (seconds since `start`, line) for each line of `stream` as it arrives."""
    for line in stream:
        out.append((time.perf_counter() - start, line))


def tool_phases(marks: list[tuple[float, str, str]]) -> float:
    """The time spent in tools, seen from outside: `marks` are (time, "step" | "call" |
    "result", step key); per step, from its first call to its last result."""
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for t, what, key in marks:
        if what == "call":
            first.setdefault(key, t)
        elif what == "result" and key in first:
            last[key] = t
    return sum(last[k] - first[k] for k in last)


@dataclass
class Agent:
    name: str
    props: dict[str, dict[str, Any]] | None  # tool schemas; None for Claude Code's own

    def command(self, root: Path, base_url: str, home: Path) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def parse_output(self, run: Run, lines: list[tuple[float, bytes]]) -> None:
        pass


BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}


class Toolbelt(Agent):
    def __init__(self, binary: str) -> None:
        super().__init__("toolbelt", tool_schemas_of_toolbelt(binary))
        self.binary = binary

    def command(self, root: Path, base_url: str, home: Path) -> tuple[list[str], dict[str, str]]:
        argv = [
            self.binary,
            "--profile", "claude",
            # The same five tools Claude Code is given (--tools below).
            "--tools", CLAUDE_TOOLS,
            "--root", str(root),
            # Kept across runs, as Claude Code's HOME is: not a fresh store per run.
            "--state-dir", str(home / "state"),
            "agent",
            "-p", PROMPT,
            "--provider", "anthropic",
            "--model", "scripted-model",
            "--base-url", base_url,
            "--json",
            "--yes",
        ]
        env = {**BASE_ENV, "HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-bench", "RUST_LOG": "off"}
        return argv, env

    def parse_output(self, run: Run, lines: list[tuple[float, bytes]]) -> None:
        tool_ms = 0.0
        marks = []
        step = "0"
        ended = False
        for t, line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("type")
            if not run.first_event_s:
                run.first_event_s = t
            if kind == "step_started":
                step = str(event.get("step"))
            elif kind == "tool_call":
                marks.append((t, "call", step))
            elif kind == "tool_result":
                marks.append((t, "result", step))
                tool_ms += float(event.get("time_ms", 0))
            elif kind == "run_ended":
                ended = True
                run.last_event_s = t
                if event.get("outcome") != "final_answer":
                    run.problems.append(f"run ended: {event.get('outcome')}: {event.get('message', '')[:200]}")
        if not ended:
            run.problems.append("no run_ended event")
        run.tool_ms = tool_ms
        run.tool_phase_s = tool_phases(marks)


CLAUDE_TOOLS = "Bash,Read,Edit,Glob,Grep"


class Claude(Agent):
    def __init__(self, binary: str, bare: bool) -> None:
        super().__init__("claude-code", None)
        self.binary = binary
        self.bare = bare

    def command(self, root: Path, base_url: str, home: Path) -> tuple[list[str], dict[str, str]]:
        argv = [
            self.binary,
            "-p", PROMPT,
            "--dangerously-skip-permissions",
            "--tools", CLAUDE_TOOLS,
            "--output-format", "stream-json",
            "--verbose",
        ]
        if self.bare:
            argv.append("--bare")
        env = {
            **BASE_ENV,
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-bench",
            # Running as root: Claude Code refuses --dangerously-skip-permissions as
            # root unless it is told it runs in a sandbox.
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "DISABLE_COST_WARNINGS": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
        }
        return argv, env

    def parse_output(self, run: Run, lines: list[tuple[float, bytes]]) -> None:
        marks = []
        step = "0"
        result = None
        for t, line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            kind = event.get("type")
            if kind == "system" and event.get("subtype") == "init" and not run.first_event_s:
                run.first_event_s = t
            elif kind in ("assistant", "user"):
                message = event.get("message") or {}
                if kind == "assistant":
                    step = str(message.get("id"))
                for block in message.get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        marks.append((t, "call", step))
                    elif isinstance(block, dict) and block.get("type") == "tool_result":
                        marks.append((t, "result", step))
            elif kind == "result":
                result = event
                run.last_event_s = t
        run.tool_phase_s = tool_phases(marks)
        if result is None:
            run.problems.append("no result event on stdout")
        elif result.get("is_error") or result.get("subtype") != "success":
            run.problems.append(f"result: {result.get('subtype')}: {str(result.get('result'))[:200]}")


def run_once(agent: Agent, provider_bin: str, rnd: int, kind: str, work: Path, home: Path, keep: bool) -> Run:
    """One run of `agent`: the whole task (`kind` "task"), or only the final answer
    (`kind` "answer": one model request, no tools; the cost of starting and ending)."""
    run = Run(agent.name, rnd, kind)
    rundir = work / f"{agent.name}-{kind}-{rnd}"
    root = rundir / "project"
    make_fixture(root)
    steps = STEPS if kind == "task" else []
    script, _ = make_script(root, agent.props, steps)
    provider = Provider(provider_bin, script, rundir)
    try:
        argv, env = agent.command(root, provider.base_url, home)
        lines: list[tuple[float, bytes]] = []
        with open(rundir / "stderr", "wb") as err:
            # GNU time reports the agent's peak RSS: its own ru_maxrss from wait4
            # would include the RSS of this Python process, which the kernel carries
            # over an exec after (v)fork; GNU time is small.
            time_out = rundir / "time.txt"
            start = time.perf_counter()
            proc = subprocess.Popen(
                [GNU_TIME, "-f", "%M", "-o", str(time_out), *argv],
                cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                start_new_session=True,
            )
            sampler = TreeSampler(proc.pid)
            sampler.start()
            reader = threading.Thread(target=read_lines, args=(proc.stdout, start, lines), daemon=True)
            reader.start()
            _, status, usage = os.wait4(proc.pid, 0)
            run.wall_s = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            sampler.stop.set()
            sampler.join()
            reader.join(timeout=10)
        with open(rundir / "stdout", "wb") as out:
            out.write(b"".join(f"{t:.6f} ".encode() + line for t, line in lines))
        run.exit_code = proc.returncode
        run.cpu_s = usage.ru_utime + usage.ru_stime
        run.top_rss = int(time_out.read_text().split()[-1]) * 1024
        run.tree_rss = max(sampler.peak, run.top_rss)
        run.tree_pss = sampler.peak_pss
        run.max_procs = sampler.max_procs
        run.tree_names = ",".join(sorted(sampler.names))
        log = provider.requests()
    finally:
        provider.close()
    if run.exit_code != 0:
        run.problems.append(f"exit {run.exit_code}")
    models = [r for r in log["requests"] if r.get("method") == "POST"]
    with_tools = [r for r in models if (r.get("body") or {}).get("tools")]
    run.steps = min(len(with_tools), len(script["replies"]))
    run.extra = max(0, len(with_tools) - len(script["replies"]))
    run.side_requests = len(models) - len(with_tools)
    if log.get("remaining", 0) != 0:
        run.problems.append(f"{log['remaining']} scripted replies unused")
    if run.extra:
        run.problems.append(f"{run.extra} model requests past the script")
    if with_tools:
        results = tool_results_of(with_tools[-1]["body"])
        run.tool_calls = len(results)
        run.tool_errors = sum(1 for r in results if r.get("is_error"))
    expected_calls = sum(len(s) for s in steps)
    if run.tool_calls != expected_calls:
        run.problems.append(f"{run.tool_calls} tool results sent back, {expected_calls} expected")
    agent.parse_output(run, lines)
    if kind == "task":
        run.fixed, why = check_fixture(root)
        if not run.fixed:
            run.problems.append(why)
    (rundir / "requests.json").write_text(json.dumps(log, indent=1))
    if kind == "task":
        run.floor_s = provider_floor(provider_bin, script, models, rundir / "replay")
    if not keep and run.valid:
        shutil.rmtree(rundir)
    return run


# ---------------------------------------------------------------------------
# Report.


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def ms(s: float) -> str:
    return f"{s * 1000:.0f} ms" if s >= 0.1 else f"{s * 1000:.1f} ms"


def ratio(peer: float, ours: float) -> str:
    return f"{peer / ours:.1f}x" if ours else "-"


def med(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


@dataclass
class Summary:
    """The medians of one agent's valid runs."""

    runs: int
    steps: float
    side: float
    tool_calls: int
    tool_errors: float
    wall: float
    wall_min: float
    cpu: float
    per_step: float
    answer_wall: float  # the final answer alone: start, one request, exit
    answer_cpu: float
    marginal: float  # (task - answer) / (steps - 1), paired by round
    tools: float | None  # tools' own time of a task run (toolbelt only)
    marginal_net: float | None  # marginal per step less the tools' own time (toolbelt only)
    phases: float  # tool phases seen on the event stream, whole task
    marginal_net_phases: float  # marginal per step less the tool phases
    first_event: float  # spawn to the first event
    steady_net: float  # (last event - first event - tool phases) / steps
    exit_after: float  # last event to exit
    floor: float  # provider and HTTP alone per step (replayed)
    top_rss: float
    tree_rss: float
    tree_pss: float
    answer_tree_rss: float
    names: str
    max_procs: int


def summarize(runs: list[Run], agent: str) -> Summary | None:
    tasks = {r.round: r for r in runs if r.agent == agent and r.kind == "task" and r.valid}
    answers = {r.round: r for r in runs if r.agent == agent and r.kind == "answer" and r.valid}
    if not tasks or not answers:
        return None
    t = list(tasks.values())
    pairs = [(tasks[n], answers[n]) for n in sorted(tasks) if n in answers]
    marginal = med([(a.wall_s - b.wall_s) / (a.steps - b.steps) for a, b in pairs])
    has_tools = all(r.tool_ms is not None for r in t)
    tools = med([r.tool_ms / 1000 for r in t]) if has_tools else None
    net = (
        med([(a.wall_s - b.wall_s - a.tool_ms / 1000) / (a.steps - b.steps) for a, b in pairs])
        if has_tools
        else None
    )
    return Summary(
        runs=len(t),
        steps=med([r.steps for r in t]),
        side=med([r.side_requests for r in t]),
        tool_calls=t[0].tool_calls,
        tool_errors=med([r.tool_errors for r in t]),
        wall=med([r.wall_s for r in t]),
        wall_min=min(r.wall_s for r in t),
        cpu=med([r.cpu_s for r in t]),
        per_step=med([r.wall_s / r.steps for r in t]),
        answer_wall=med([r.wall_s for r in answers.values()]),
        answer_cpu=med([r.cpu_s for r in answers.values()]),
        marginal=marginal,
        tools=tools,
        marginal_net=net,
        phases=med([r.tool_phase_s for r in t]),
        marginal_net_phases=med([(a.wall_s - b.wall_s - a.tool_phase_s) / (a.steps - b.steps) for a, b in pairs]),
        first_event=med([r.first_event_s for r in t]),
        steady_net=med([(r.last_event_s - r.first_event_s - r.tool_phase_s) / r.steps for r in t]),
        exit_after=med([r.wall_s - r.last_event_s for r in t]),
        floor=med([r.floor_s / r.steps for r in t]),
        top_rss=med([r.top_rss for r in t]),
        tree_rss=med([r.tree_rss for r in t]),
        tree_pss=med([r.tree_pss for r in t]),
        names=",".join(sorted({n for r in t for n in r.tree_names.split(",") if n})),
        answer_tree_rss=med([r.tree_rss for r in answers.values()]),
        max_procs=max(r.max_procs for r in t),
    )


def report(runs: list[Run], agents: list[Agent], args: argparse.Namespace, versions: dict[str, str]) -> str:
    lines = []
    for r in runs:
        if not r.valid:
            lines.append(f"invalid: {r.agent} {r.kind} round {r.round}: {'; '.join(r.problems)}")
    sums = {a.name: summarize(runs, a.name) for a in agents}
    if len(agents) == 2 and all(sums.values()):
        ours, peer = agents[0].name, agents[1].name
        o, p = sums[ours], sums[peer]
        assert o is not None and p is not None
        rows = [
            ("valid task runs", f"{o.runs}/{args.rounds}", f"{p.runs}/{args.rounds}", ""),
            ("steps: model requests that used the script", f"{o.steps:.0f}", f"{p.steps:.0f}", ""),
            ("side requests (without tools)", f"{o.side:.0f}", f"{p.side:.0f}", ""),
            ("tool calls / tool results marked as errors", f"{o.tool_calls} / {o.tool_errors:.0f}", f"{p.tool_calls} / {p.tool_errors:.0f}", ""),
            ("**wall time, whole task**", f"**{ms(o.wall)}**", f"**{ms(p.wall)}**", f"**{ratio(p.wall, o.wall)}**"),
            ("wall time, fastest task run", ms(o.wall_min), ms(p.wall_min), ratio(p.wall_min, o.wall_min)),
            ("CPU time (user + system), whole task", ms(o.cpu), ms(p.cpu), ratio(p.cpu, o.cpu)),
            ("wall time per step (whole task / steps)", ms(o.per_step), ms(p.per_step), ratio(p.per_step, o.per_step)),
            ("final answer alone: start, 1 request, exit", ms(o.answer_wall), ms(p.answer_wall), ratio(p.answer_wall, o.answer_wall)),
            ("CPU time, final answer alone", ms(o.answer_cpu), ms(p.answer_cpu), ratio(p.answer_cpu, o.answer_cpu)),
            (f"**wall time per extra step** (task - answer alone) / {len(STEPS)}", f"**{ms(o.marginal)}**", f"**{ms(p.marginal)}**", f"**{ratio(p.marginal, o.marginal)}**"),
            ("tool phases on the event stream (first call to last result, per step), whole task", ms(o.phases), ms(p.phases), ratio(p.phases, o.phases)),
            ("tools' own time, whole task (toolbelt's tool_result time_ms)", ms(o.tools or 0), "not reported", ""),
            ("**loop time per extra step, net of tool phases**", f"**{ms(o.marginal_net_phases)}**", f"**{ms(p.marginal_net_phases)}**", f"**{ratio(p.marginal_net_phases, o.marginal_net_phases)}**"),
            ("loop time per extra step, net of the tools' own time_ms", ms(o.marginal_net or 0), "-", ""),
            ("spawn to the first event (run_started / init)", ms(o.first_event), ms(p.first_event), ratio(p.first_event, o.first_event)),
            ("per step between first and last event, net of tool phases", ms(o.steady_net), ms(p.steady_net), ratio(p.steady_net, o.steady_net)),
            ("last event to exit", ms(o.exit_after), ms(p.exit_after), ratio(p.exit_after, o.exit_after)),
            ("provider + loopback HTTP per step (the agent's requests replayed from Python)", ms(o.floor), ms(p.floor), ratio(p.floor, o.floor)),
            ("**per step between first and last event, net of tool phases and provider**", f"**{ms(o.steady_net - o.floor)}**", f"**{ms(p.steady_net - p.floor)}**", f"**{ratio(p.steady_net - p.floor, o.steady_net - o.floor)}**"),
            ("**peak RSS, process tree** (/proc every 10 ms, summed)", f"**{mb(o.tree_rss)}**", f"**{mb(p.tree_rss)}**", f"**{ratio(p.tree_rss, o.tree_rss)}**"),
            ("peak PSS, process tree (smaps_rollup every 30 ms, summed)", mb(o.tree_pss), mb(p.tree_pss), ratio(p.tree_pss, o.tree_pss)),
            ("peak RSS, agent process (GNU time %M)", mb(o.top_rss), mb(p.top_rss), ratio(p.top_rss, o.top_rss)),
            ("peak RSS, process tree, final answer alone", mb(o.answer_tree_rss), mb(p.answer_tree_rss), ratio(p.answer_tree_rss, o.answer_tree_rss)),
            ("most processes in the tree at once", f"{o.max_procs}", f"{p.max_procs}", ""),
            ("processes seen in the tree", o.names, p.names, ""),
        ]
        lines.append("")
        lines.append(f"| medians of {args.rounds} rounds | {ours} ({versions.get(ours, '')}) | {peer} ({versions.get(peer, '')}) | {peer} / {ours} |")
        lines.append("|---|---:|---:|---:|")
        for row in rows:
            lines.append("| " + " | ".join(row) + " |")
        # The verdict uses the tool phases stamped on the event stream (microseconds):
        # toolbelt's `time_ms` is whole milliseconds, cut down, so subtracting it
        # leaves up to 1 ms per call of the tools' own time in the "loop" figure.
        net = o.marginal_net_phases or 0
        lines.append("")
        lines.append(f"toolbelt's loop time per extra step: net of its tools' own time_ms {ms(o.marginal_net or 0)}, "
                     f"net of the tool phases seen on its event stream {ms(o.marginal_net_phases)}")
        lines.append(
            f"targets: toolbelt's loop time per step net of its tool phases {ms(net)} (target < {TARGET_OVERHEAD_MS:.0f} ms: "
            f"{'met' if net * 1000 < TARGET_OVERHEAD_MS else 'NOT met'}); peak RSS {peer} / {ours}: process tree "
            f"{ratio(p.tree_rss, o.tree_rss)}, agent process {ratio(p.top_rss, o.top_rss)} (target >= {TARGET_RSS_RATIO:.0f}x: "
            f"{'met' if p.tree_rss / o.tree_rss >= TARGET_RSS_RATIO else 'NOT met'})"
        )
    lines.append("")
    lines.append("| agent | run | round | wall | CPU | steps | side | first event | tool phases | tools' time_ms | agent RSS | tree RSS | tree PSS | procs | valid |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in runs:
        tool = "-" if r.tool_ms is None else ms(r.tool_ms / 1000)
        lines.append(
            f"| {r.agent} | {r.kind} | {r.round} | {ms(r.wall_s)} | {ms(r.cpu_s)} | {r.steps} | {r.side_requests} | "
            f"{ms(r.first_event_s)} | {ms(r.tool_phase_s)} | {tool} | "
            f"{mb(r.top_rss)} | {mb(r.tree_rss)} | {mb(r.tree_pss)} | {r.max_procs} | {'yes' if r.valid else 'NO: ' + '; '.join(r.problems)} |"
        )
    return "\n".join(lines)


def version_of(argv: list[str], home: Path) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**BASE_ENV, "HOME": str(home)})
        return out.stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--provider", required=True, help="the scripted_provider binary")
    ap.add_argument("--toolbelt", help="the toolbelt binary")
    ap.add_argument("--claude", help="Claude Code's claude binary")
    ap.add_argument("--claude-bare", action="store_true", help="run Claude Code with --bare")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured rounds first")
    ap.add_argument("--work", help="keep the runs' directories here (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep valid runs' directories too")
    ap.add_argument("--print-scripts", action="store_true", help="print the scripts and exit")
    args = ap.parse_args()
    for name in ("provider", "toolbelt", "claude"):
        if getattr(args, name):
            setattr(args, name, str(Path(getattr(args, name)).resolve()))

    agents: list[Agent] = []
    if args.toolbelt:
        agents.append(Toolbelt(args.toolbelt))
    if args.claude:
        agents.append(Claude(args.claude, args.claude_bare))
    if not agents:
        ap.error("give --toolbelt, --claude or both")

    if args.print_scripts:
        for a in agents:
            script, notes = make_script(Path("/ROOT"), a.props)
            print(f"## {a.name}: {len(script['replies'])} replies; argument renames: {notes or 'none'}")
            for reply in script["replies"]:
                print("  ", json.dumps(reply.get("tool_calls") or reply.get("text")))
        return 0

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="bench-agent-"))
    work.mkdir(parents=True, exist_ok=True)
    homes = {}
    for a in agents:
        homes[a.name] = work / f"home-{a.name}"
        homes[a.name].mkdir(exist_ok=True)
    versions = {}
    if args.toolbelt:
        versions["toolbelt"] = version_of([args.toolbelt, "--version"], homes["toolbelt"])
    if args.claude:
        versions["claude-code"] = version_of([args.claude, "--version"], homes["claude-code"])
    print(f"versions: {versions}", file=sys.stderr)
    for a in agents:
        _, notes = make_script(Path("/ROOT"), a.props)
        if notes:
            print(f"{a.name}: the script's arguments renamed: {', '.join(notes)}", file=sys.stderr)

    runs: list[Run] = []
    for rnd in range(1 - args.warmup, args.rounds + 1):
        order = agents if rnd % 2 else list(reversed(agents))
        for kind in ("task", "answer"):
            for a in order:
                r = run_once(a, args.provider, rnd, kind, work, homes[a.name], args.keep)
                tag = "warm-up" if rnd < 1 else f"round {rnd}"
                print(
                    f"{tag}: {a.name} {kind}: {ms(r.wall_s)} wall, {r.steps} steps (+{r.side_requests} side), "
                    f"tree RSS {mb(r.tree_rss)}, {'ok' if r.valid else 'INVALID: ' + '; '.join(r.problems)}",
                    file=sys.stderr,
                )
                if rnd >= 1:
                    runs.append(r)
    # Order the table: toolbelt first.
    # /proc/self/net/dev lists the interfaces of this process's network namespace
    # (/sys/class/net shows the namespace sysfs was mounted in).
    with open("/proc/self/net/dev") as f:
        nets = sorted(line.split(":")[0].strip() for line in f if ":" in line)
    print(f"network interfaces during the run: {', '.join(nets)}"
          f"{' (loopback only)' if nets == ['lo'] else ''}")
    print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end, "
          f"Linux {platform.release()}, Python {platform.python_version()}")
    print(report(runs, agents, args, versions))
    print(f"\nrun directories (invalid or --keep): {work}")
    return 0 if all(r.valid for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
