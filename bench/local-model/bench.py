#!/usr/bin/env python3
"""The local-model bench: toolbelt's agent against mini-swe-agent on one small model.

What it measures
    Every configuration works on the same small coding tasks (tasks/NAME/: task.txt, the
    starting files in files/, check.sh, and solve.sh, a reference solution the agents
    never see), each in a fresh temporary directory, with the same model behind the same
    llama-server, the same cap of model calls (--max-steps, default 15) and the same
    wall-clock cap per task (--timeout, default 600 s). Each (task, configuration) runs
    --repeat times (default 1); each repetition is a record of its own (`rep`, from 1).
    For each run it records:
      solved               check.sh exits 0 in the task directory after the run (for the
                           find-* tasks check.sh reads the agent's final answer, $1)
      steps                model calls, as the agent counts them (toolbelt: the run_ended
                           event's `steps`; mini-swe-agent: its trajectory's api_calls)
      wall_s               wall time of the whole agent process, start-up included
      first_prompt_tokens  llama-server's own usage.prompt_tokens of the run's first
                           request: the system prompt, the tool schemas and the task
      constraint           how the server held each reply to a call, from toolbelt's
                           run_started event (none, tool_choice, grammar, json_schema);
                           null for mini-swe-agent. `wire` says what the first request
                           actually carried (tool_choice "required", a grammar, a JSON
                           schema response_format, or none) and its temperature and seed.
      first_reply_imitates the model's first reply wrote a tool result or an observation
                           itself: its text holds <tool_response>, or a line that starts
                           with Observation or <|im_start|> (toolbelt: the first
                           assistant_message event; mini-swe-agent: the first reply of the
                           trajectory, a reply refused with a format error included);
                           first_reply_calls: the calls that reply made. Null: unknown.
      calls_made           tool calls of the run, finish included (toolbelt: tool_call
                           events, plus the finish call of a small-model run that ended
                           with an answer; mini-swe-agent: its actions)
      changed_files        files of the task directory the run created, changed or
                           deleted ({path: created|changed|deleted}, the directory after
                           the run against the task's files/, before check.sh runs;
                           .git, __pycache__, .toolbelt and *.pyc are left out);
                           destroyed_files: files of files/ it deleted or left with under
                           half their lines
      solution_files       the same for solve.sh run on a fresh copy (once per task)
      failure              for a run not solved, one class, the first that applies:
                             time cap        it was stopped at the wall-clock cap
                             destroyed file  it deleted a file of files/, or left one with
                                             under half its lines, and solve.sh does not
                             loop            outcome repeated_call (toolbelt's guards: the
                                             same call again and again, or an A-B-A-B
                                             cycle); mini-swe-agent, which has no such
                                             guard: it ran into its step limit after its
                                             commands went round the way toolbelt's small
                                             guards would have stopped (one command in 4
                                             steps in a row, or a cycle of 2 or 3 steps
                                             with the same outputs 3 rounds in a row)
                             no call         not one tool call in the run
                             wrong file      (tasks whose solution changes files) it
                                             changed files but none of the solution's, or
                                             changed a file the solution does not change
                                             and left a solution file as it was
                             step cap        outcome max_steps; mini-swe-agent:
                                             LimitsExceeded
                             no answer       outcome no_answer; mini-swe-agent: ended by
                                             format errors (RepeatedFormatError)
                             wrong answer    it ended with an answer (final_answer;
                                             mini-swe-agent: Submitted), the check failed
                             error           anything else (provider error, crash, ...)
      rewind_would_restore the run changed or deleted files the solution does not touch:
                           a rewind to the start of the run would give them back
    plus the requests the server saw, the prompt tokens it processed, the tokens it
    generated, and how the run ended. The requests pass through a small recording
    reverse proxy on another loopback port (stream-transparent: SSE lines are forwarded
    as they come), one URL prefix per run, so the token counts come from the server for
    both agents alike. toolbelt's one-off question whether the server honours
    tool_choice "required" (asked only when the server's /props does not say) is
    recorded apart (probe_requests), not as a model call.

The configurations (the default set: constrained, lean, native, mini)
    constrained  toolbelt agent --model-size small --protocol auto --constrain auto
                 (the small-model setup: finish tool, loop and destructive-command
                 guards, temperature 0.2, every reply held to one call by what the
                 server supports; on llama-server: native calls, tool_choice required)
    lean         toolbelt agent --model-size small --protocol native --constrain none
                 (the same without the constraint: a reply without a call gets a
                 reminder)
    native       toolbelt --tools coding agent --protocol native (a large-model setup)
    mini         mini-swe-agent 2.4.6 (PyPI), `mini -y --exit-immediately` with its
                 default mini.yaml, litellm's openai/ provider, the local environment
                 (no docker)
    Any toolbelt configuration can be given a temperature of its own, NAME@T
    (constrained@0,constrained@0.8: a sweep in one run, the runs taking turns).
    Optional (--configs):
    text         toolbelt --tools coding agent --protocol text
    grammar      toolbelt agent --model-size small --protocol text --constrain grammar
    small        toolbelt agent --model-size small --protocol native: no flag that a
                 binary from before --constrain lacks, so that an older TOOLBELT_BIN
                 can be measured beside today's (its prompt, its first replies)
    auto         an alias of constrained (it was --model-size small --protocol auto,
                 which now constrains its replies by default)
    All toolbelt runs get --max-steps, --yes, --json, a fresh --state-dir and
    --context-window (the server's context, so toolbelt compacts instead of
    overflowing it), and --temperature and --seed when the bench is given them (mini
    then gets -c model.model_kwargs.temperature=T and model.model_kwargs.seed=N).
    Without --temperature the small configurations sample at toolbelt's 0.2 for small
    models, native and mini at llama-server's default. A configuration the toolbelt
    binary does not know yet (no --model-size, --constrain, --protocol auto,
    --temperature or --seed where needed) is reported as "unavailable". The
    configurations alternate task by task (task 1: constrained, lean, native, mini;
    task 2: ...), so that noise from the machine hits all alike; with --repeat, all
    tasks run once, then all again, and so on. The server runs one slot (-np 1)
    without the host-memory prompt cache (--cache-ram 0), and the slot's cache is
    erased before each run: no run starts with a prompt another run left behind. -n
    4096 caps an answer whose request sets no max_tokens (mini-swe-agent's; toolbelt
    asks for 2048 at most from a local server), so that a model stuck repeating itself
    does not run to the time cap.

The chat template (--template)
    tools   qwen2.5-tools.jinja: Qwen2.5's own format, calls in <tool_call> tags. The
            1.5B coder model mostly writes its calls as ```json blocks instead, which
            this llama-server returns as plain content: toolbelt runs calls written in
            the text as calls; mini-swe-agent answers them with a format error.
    fenced  qwen2.5-coder-fenced.jinja: calls as ```json blocks, which llama-server
            then returns as tool_calls.

The final answer (find-* tasks)
    toolbelt: the run_ended event's message when the outcome is final_answer (for a
    small model: the finish call's answer).
    mini-swe-agent: when it submitted (exit status Submitted), its submission (the output
    after the COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT line) and the text of the reply that
    submitted.

The report (printed at the end, and by --report)
    The configurations with solved runs, steps, wall time, tokens, time-outs, first
    replies that imitated a tool result, and the constraints seen; solved/total per kind
    of task (the task name's prefix: bugfix, find, create, rename, config, multi); each
    task (✓ or ✗ per repetition); the failure classes per configuration and the runs a
    rewind would have helped. Markdown.

How to run
    bench/local-model/run.sh                                  # the default set (hours)
    bench/local-model/run.sh --configs lean,mini --tasks bugfix-1,rename-1
    bench/local-model/run.sh --configs constrained,grammar --repeat 3 --seed 1
    bench/local-model/run.sh --tasks find                     # a kind: find-1, find-2, ...
    bench/local-model/run.sh --template fenced                # the other chat template
    bench/local-model/run.sh --resume results/20250101-120000.jsonl   # finish a run
    python3 bench/local-model/bench.py --report results/20250101-120000.jsonl
    python3 bench/local-model/bench.py --self-test            # checks fail as given, pass solved
    Results go to results/RUN.jsonl (one JSON object a line, written as measured; --resume
    skips each (task, configuration, repetition) already done), the agents' logs to
    results/RUN/ (TASK.CONFIG.*, TASK.CONFIG.rN.* from the second repetition on),
    llama-server's log to results/RUN/server.log.
    Environment: TOOLBELT_BIN (default $CARGO_TARGET_DIR/release/toolbelt, else
    target/release/toolbelt, built when missing), LOCAL_MODEL_HOME (default
    ~/.cache/toolbelt/local-model, where setup.sh puts llama-server, the model and the
    venv with mini-swe-agent).
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TASKS_DIR = HERE / "tasks"
RESULTS_DIR = HERE / "results"
LM_HOME = Path(os.environ.get("LOCAL_MODEL_HOME", Path.home() / ".cache/toolbelt/local-model"))
LLAMA_SERVER = LM_HOME / "bin/llama-server"
MODEL = LM_HOME / "model/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MINI = LM_HOME / "venv/bin/mini"
TEMPLATES = {
    # Qwen2.5's own format: calls in <tool_call></tool_call> tags (what the brief asks for).
    "tools": HERE / "qwen2.5-tools.jinja",
    # Calls as ```json fenced blocks, the way Qwen2.5-Coder-1.5B writes them on its own.
    "fenced": HERE / "qwen2.5-coder-fenced.jinja",
}

# Every configuration, in the order of the tables; the default set is run when --configs
# is not given.
CONFIGS = ["constrained", "lean", "native", "mini", "text", "grammar", "small"]
DEFAULT_CONFIGS = ["constrained", "lean", "native", "mini"]
ALIASES = {"auto": "constrained"}  # --model-size small --protocol auto now constrains by default
SMALL = ["--model-size", "small"]
TOOLBELT_CONFIGS = {
    # name: (arguments before `agent`, arguments after it, features the binary needs)
    "constrained": ([], SMALL + ["--protocol", "auto", "--constrain", "auto"],
                    {"model-size", "protocol-auto", "constrain"}),
    "lean": ([], SMALL + ["--protocol", "native", "--constrain", "none"], {"model-size", "constrain"}),
    "native": (["--tools", "coding"], ["--protocol", "native"], set()),
    "text": (["--tools", "coding"], ["--protocol", "text"], set()),
    "grammar": ([], SMALL + ["--protocol", "text", "--constrain", "grammar"], {"model-size", "constrain"}),
    "small": ([], SMALL + ["--protocol", "native"], {"model-size"}),
}
# The kinds of task (a task's name without its number), in the order of the tables.
KINDS = ["bugfix", "find", "create", "rename", "config", "multi"]
# Why a run that was not solved failed: the first class that applies (classify_failure).
FAILURES = ["time cap", "destroyed file", "loop", "no call", "wrong file", "step cap", "no answer",
            "wrong answer", "error"]
# Left out when the task directory is compared before and after a run.
IGNORED_DIRS = {".git", "__pycache__", ".toolbelt"}
IGNORED_SUFFIXES = (".pyc",)
# A first reply that writes a tool's result or an observation itself.
IMITATION = re.compile(r"<tool_response>|^[ \t*#>`]*(?:Observation|<\|im_start\|>)", re.M)
# toolbelt's guards for a small model, applied to mini-swe-agent's trajectory afterwards:
# the same call in this many steps in a row, a cycle of 2 or 3 steps this many rounds in a row.
REPEAT_STOP = 4
CYCLE_LENGTHS = (2, 3)
CYCLE_STOP_ROUNDS = 3


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url: str, method: str = "GET", timeout: float = 10) -> tuple[int, object]:
    """(status, parsed body or None); status 0 when nothing answered."""
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        body, status = e.read(), e.code
    except (OSError, http.client.HTTPException):
        return 0, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


# --------------------------------------------------------------------------------------
# llama-server


def template_path(name: str) -> Path:
    path = TEMPLATES.get(name) or Path(name)
    if not path.exists():
        sys.exit(f"no chat template {name} (have: {', '.join(TEMPLATES)}, or a file)")
    return path


class LlamaServer:
    """llama-server on a free loopback port (or one already running, with --server-url)."""

    def __init__(self, args, artifacts: Path):
        self.proc = None
        self.args = args
        if args.server_url:
            self.url = args.server_url.rstrip("/")
            return
        for path in (LLAMA_SERVER, MODEL):
            if not path.exists():
                sys.exit(f"{path} is missing: run bench/local-model/setup.sh")
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.cmd = [
            str(LLAMA_SERVER), "-m", str(MODEL), "--host", "127.0.0.1", "--port", str(port),
            "--jinja", "--chat-template-file", str(template_path(args.template)),
            "-c", str(args.ctx), "-t", str(args.threads), "-tb", str(args.threads),
            "-np", "1", "--cache-ram", "0", "-n", "4096",
            # Only so that POST /slots/0?action=erase is allowed (nothing is saved there).
            "--slot-save-path", str(artifacts / "slots"),
        ] + args.server_arg
        self.log_path = artifacts / "server.log"
        (artifacts / "slots").mkdir(exist_ok=True)
        log(f"starting {' '.join(self.cmd)}")
        self.log_file = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd, stdout=self.log_file, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)

    def wait_ready(self, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-3000:]
                sys.exit(f"llama-server exited ({self.proc.returncode}):\n{tail}")
            status, _ = http_json(self.url + "/health", timeout=5)
            if status == 200:
                return
            time.sleep(0.5)
        sys.exit(f"llama-server did not answer /health with 200 in {timeout:.0f} s")

    def props(self) -> dict:
        _, props = http_json(self.url + "/props")
        return props if isinstance(props, dict) else {}

    def wait_idle(self, timeout: float = 300) -> None:
        """Waits until no slot is busy (a killed agent's last request may still run)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, slots = http_json(self.url + "/slots")
            if status != 200 or not isinstance(slots, list):
                return
            if not any(s.get("is_processing") for s in slots if isinstance(s, dict)):
                return
            time.sleep(0.5)

    def erase_cache(self) -> None:
        """Empties the slot's prompt cache, so that no run reuses what another left
        (needs --slot-save-path; a server given with --server-url may refuse)."""
        status, slots = http_json(self.url + "/slots")
        for s in slots if status == 200 and isinstance(slots, list) else []:
            code, body = http_json(f"{self.url}/slots/{s.get('id', 0)}?action=erase", method="POST")
            if code != 200 and not getattr(self, "warned", False):
                log(f"llama-server does not erase its slots ({code}): runs may reuse a cached prefix")
                self.warned = True

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --------------------------------------------------------------------------------------
# The recording proxy

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailers", "transfer-encoding", "upgrade", "content-length", "host",
              "accept-encoding"}


class Recorder:
    """What the proxy saw, by run id; each request also appended to a JSON-lines file."""

    def __init__(self, path: Path):
        self.lock = threading.Lock()
        self.runs: dict[str, list[dict]] = {}
        self.active: dict[str, set] = {}  # run -> its open connections to llama-server
        self.file = open(path, "a")

    def opened(self, run: str, conn) -> None:
        with self.lock:
            self.active.setdefault(run, set()).add(conn)

    def closed(self, run: str, conn) -> None:
        with self.lock:
            self.active.get(run, set()).discard(conn)

    def abort(self, run: str) -> None:
        """Closes a run's requests to llama-server (its agent was killed): the server
        sees the connection go and cancels the task instead of finishing it for nobody."""
        with self.lock:
            conns = list(self.active.get(run, ()))
        for conn in conns:
            conn.aborted = True
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError):
                pass

    def add(self, run: str, record: dict) -> None:
        with self.lock:
            self.runs.setdefault(run, []).append(record)
            self.file.write(json.dumps({"run": run, **record}) + "\n")
            self.file.flush()

    def get(self, run: str) -> list[dict]:
        with self.lock:
            return list(self.runs.get(run, []))


def usage_of(obj: dict, record: dict) -> None:
    """Copies llama-server's usage and timings from a response (or its last SSE chunk)."""
    usage = obj.get("usage")
    if isinstance(usage, dict):
        record["prompt_tokens"] = usage.get("prompt_tokens")
        record["completion_tokens"] = usage.get("completion_tokens")
        details = usage.get("prompt_tokens_details") or {}
        if isinstance(details, dict) and "cached_tokens" in details:
            record["cached_tokens"] = details["cached_tokens"]
    timings = obj.get("timings")
    if isinstance(timings, dict):
        for key in ("prompt_n", "cache_n", "predicted_n", "prompt_ms", "predicted_ms"):
            if key in timings:
                record[key] = timings[key]
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        reason = choices[0].get("finish_reason")
        if reason:
            record["finish_reason"] = reason


def request_facts(path: str, body: bytes) -> dict:
    """What a chat request asked of the server: how it held the reply to a call
    (`constraint`: tool_choice, grammar, json_schema or none), its temperature and
    seed, and whether it is toolbelt's one-off question whether the server honours
    tool_choice "required" (`probe`: system "Call the tool.", user "Go.")."""
    if not path.endswith("/chat/completions"):
        return {}
    try:
        req = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(req, dict):
        return {}
    fmt = req.get("response_format")
    if req.get("tool_choice") == "required":
        constraint = "tool_choice"
    elif req.get("grammar"):
        constraint = "grammar"
    elif isinstance(fmt, dict) and fmt.get("type") == "json_schema" or req.get("json_schema"):
        constraint = "json_schema"
    else:
        constraint = "none"
    messages = req.get("messages") if isinstance(req.get("messages"), list) else []
    texts = [m.get("content") for m in messages[:2] if isinstance(m, dict)]
    facts = {"constraint": constraint, "temperature": req.get("temperature"), "seed": req.get("seed")}
    if texts == ["Call the tool.", "Go."] and req.get("tool_choice") == "required":
        facts["probe"] = True
    return facts


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    """Forwards /r/<run>/<path> to llama-server's /<path> and records the usage."""

    protocol_version = "HTTP/1.1"
    upstream: tuple[str, int]
    recorder: Recorder

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        self.forward()

    def do_POST(self):
        self.forward()

    def read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def forward(self):
        match = re.match(r"^/r/([^/]+)(/.*)$", self.path)
        run, path = (match.group(1), match.group(2)) if match else ("-", self.path)
        body = self.read_body()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        record = {"path": path, "t": time.time(), **request_facts(path, body)}
        t0 = time.monotonic()
        conn = http.client.HTTPConnection(*self.upstream, timeout=3600)
        self.recorder.opened(run, conn)
        try:
            conn.request(self.command, path, body, headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            self.recorder.closed(run, conn)
            conn.close()
            msg = json.dumps({"error": f"proxy: llama-server unreachable: {e}"}).encode()
            self.send_response(502)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(msg)))
            self.end_headers()
            self.wfile.write(msg)
            record.update(status=502, secs=time.monotonic() - t0)
            self.recorder.add(run, record)
            return
        record["status"] = resp.status
        stream = resp.getheader("Content-Type", "").startswith("text/event-stream")
        record["stream"] = stream
        try:
            self.send_response_only(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in HOP_BY_HOP:
                    self.send_header(k, v)
            if stream:
                # Line by line, each line one chunk, as the server sends them.
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while line := resp.readline():
                    self.write_chunk(line)
                    if line.startswith(b"data: {"):
                        try:
                            usage_of(json.loads(line[6:]), record)
                        except ValueError:
                            pass
                self.wfile.write(b"0\r\n\r\n")
            else:
                data = resp.read()
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                try:
                    obj = json.loads(data)
                    if isinstance(obj, dict):
                        usage_of(obj, record)
                except ValueError:
                    pass
        except (OSError, http.client.HTTPException, ValueError) as e:
            # The agent went away (killed at the time cap), or was aborted.
            record["error"] = f"cut: {type(e).__name__}: {e}"
            self.close_connection = True
        finally:
            self.recorder.closed(run, conn)
            conn.close()
            if getattr(conn, "aborted", False):
                record["aborted"] = True
            record["secs"] = round(time.monotonic() - t0, 3)
            self.recorder.add(run, record)


class Proxy:
    def __init__(self, upstream_url: str, recorder: Recorder):
        host, port = re.match(r"^http://([^:/]+):(\d+)", upstream_url).groups()
        handler = type("Handler", (ProxyHandler,), {"upstream": (host, int(port)), "recorder": recorder})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def base_url(self, run: str) -> str:
        return f"http://127.0.0.1:{self.port}/r/{run}/v1"

    def stop(self) -> None:
        self.server.shutdown()


# --------------------------------------------------------------------------------------
# Tasks


class Task:
    def __init__(self, path: Path):
        self.name = path.name
        self.dir = path
        self.kind = re.sub(r"-\d+$", "", path.name)
        self.prompt = (path / "task.txt").read_text().strip()
        self.check = next(p for p in (path / "check.sh", path / "check.py") if p.exists())
        self._original: dict[str, bytes] | None = None
        self._solution: dict | None = None

    @property
    def original(self) -> dict[str, bytes]:
        """The task's starting files, as snapshot() reads them."""
        if self._original is None:
            self._original = snapshot(self.dir / "files")
        return self._original

    def solution(self) -> dict:
        """What solve.sh changes, run once on a fresh copy: {"files": {path: created|
        changed|deleted}, "destroyed": [...], "solved": the check passes after it}."""
        if self._solution is None:
            with tempfile.TemporaryDirectory(prefix=f"tb-lm-solution-{self.name}-") as tmp:
                tmp = Path(tmp)
                work = self.make_workdir(tmp)
                answer = tmp / "answer.txt"
                answer.write_text("")
                p = subprocess.run(["bash", str(self.dir / "solve.sh"), str(answer)], cwd=work,
                                   env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
                                   capture_output=True, text=True, timeout=120)
                changes, destroyed = file_changes(self.original, snapshot(work))
                solved, out = self.run_check(work, answer)
                self._solution = {"files": changes, "destroyed": destroyed, "solved": solved}
                if p.returncode != 0:
                    self._solution["error"] = f"solve.sh exit {p.returncode}: {p.stderr.strip()[-300:]}"
                elif not solved:
                    self._solution["error"] = f"check fails after solve.sh: {out[-300:]}"
        return self._solution

    def make_workdir(self, parent: Path) -> Path:
        work = parent / "work"
        shutil.copytree(self.dir / "files", work)
        return work

    def run_check(self, work: Path, answer_file: Path) -> tuple[bool, str]:
        interpreter = "python3" if self.check.suffix == ".py" else "bash"
        env = dict(os.environ, FIXTURE=str(self.dir), PYTHONDONTWRITEBYTECODE="1")
        try:
            p = subprocess.run([interpreter, str(self.check), str(answer_file)], cwd=work, env=env,
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return False, "check timed out"
        return p.returncode == 0, (p.stdout + p.stderr).strip()[-1000:]


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under root by its relative path (with /), and its content; .git,
    __pycache__ and .toolbelt directories and *.pyc files left out. A symbolic link
    is its target ("-> target"), an unreadable file b"?"."""
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS and d not in links)
        for name in filenames + links:
            if name.endswith(IGNORED_SUFFIXES):
                continue
            path = os.path.join(dirpath, name)
            rel = Path(path).relative_to(root).as_posix()
            try:
                files[rel] = (b"-> " + os.fsencode(os.readlink(path)) if os.path.islink(path)
                              else Path(path).read_bytes())
            except OSError:
                files[rel] = b"?"
    return files


def file_changes(before: dict[str, bytes], after: dict[str, bytes]) -> tuple[dict[str, str], list[str]]:
    """({path: created|changed|deleted}, the files of `before` deleted or left with under
    half their lines)."""
    changes: dict[str, str] = {}
    destroyed: list[str] = []
    for path in sorted(set(before) | set(after)):
        if path not in after:
            changes[path] = "deleted"
            destroyed.append(path)
        elif path not in before:
            changes[path] = "created"
        elif before[path] != after[path]:
            changes[path] = "changed"
            if len(after[path].splitlines()) < len(before[path].splitlines()) / 2:
                destroyed.append(path)
    return changes, destroyed


def load_tasks(selection: str | None) -> list[Task]:
    tasks = [Task(p) for p in sorted(TASKS_DIR.iterdir()) if (p / "task.txt").exists()]
    if not selection:
        return tasks
    wanted = [s.strip() for s in selection.split(",") if s.strip()]
    chosen = [t for t in tasks if t.name in wanted or t.kind in wanted]
    unknown = [w for w in wanted if not any(w in (t.name, t.kind) for t in tasks)]
    if unknown:
        sys.exit(f"unknown tasks: {', '.join(unknown)} (have: {', '.join(t.name for t in tasks)})")
    return chosen


# --------------------------------------------------------------------------------------
# The agents


def toolbelt_binary() -> Path:
    if os.environ.get("TOOLBELT_BIN"):
        return Path(os.environ["TOOLBELT_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    return target / "release" / "toolbelt"


def ensure_toolbelt(binary: Path) -> None:
    if binary.exists() or os.environ.get("TOOLBELT_BIN"):
        return
    log(f"{binary} is missing: cargo build --release --locked -p toolbelt")
    subprocess.run(["cargo", "build", "--release", "--locked", "-p", "toolbelt"], cwd=REPO, check=True)


def toolbelt_features(binary: Path) -> set[str] | None:
    """What `toolbelt agent --help` offers of the flags the configurations need."""
    try:
        text = subprocess.run([str(binary), "agent", "--help"], capture_output=True, text=True,
                              timeout=60).stdout
    except OSError:
        return None
    features = set()
    for flag in ("model-size", "constrain", "temperature", "seed"):
        if re.search(rf"--{flag}\b", text):
            features.add(flag)
    protocol = re.search(r"--protocol <PROTOCOL>(.*?)(?:\n\s+--|\Z)", text, re.S)
    if protocol and re.search(r"\bauto\b", protocol.group(1)):
        features.add("protocol-auto")
    return features


def clean_env(tmp: Path) -> dict:
    """The environment of an agent: no keys or settings of the person running the bench."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "TOOLBELT_", "MSWEA_", "LITELLM_"))}
    for var, sub in (("XDG_STATE_HOME", "xdg-state"), ("XDG_CONFIG_HOME", "xdg-config"),
                     ("XDG_CACHE_HOME", "xdg-cache")):
        env[var] = str(tmp / sub)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(5)
            return
        except subprocess.TimeoutExpired:
            continue


def run_process(cmd: list[str], cwd: Path, env: dict, stdout: Path, stderr: Path,
                timeout: float) -> tuple[int | None, float, bool]:
    """(exit status, wall seconds, timed out)."""
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(proc)
            rc, timed_out = None, True
        except BaseException:
            kill_group(proc)
            raise
        return rc, time.monotonic() - t0, timed_out


def config_parts(config: str) -> tuple[str, float | None]:
    """A configuration's name and its own temperature: `constrained@0.8` is
    (constrained, 0.8), `lean` is (lean, None)."""
    name, _, temperature = config.partition("@")
    return name, float(temperature) if temperature else None


def toolbelt_command(config: str, binary: Path, args) -> list[str]:
    """The command of a toolbelt configuration, up to the per-run arguments."""
    name, own_temperature = config_parts(config)
    before, after, _ = TOOLBELT_CONFIGS[name]
    cmd = [str(binary), *before, "agent", *after]
    temperature = own_temperature if own_temperature is not None else args.temperature
    if temperature is not None:
        cmd += ["--temperature", str(temperature)]
    if args.seed is not None:
        cmd += ["--seed", str(args.seed)]
    return cmd


def run_toolbelt(config: str, task: Task, work: Path, tmp: Path, base_url: str, args,
                 binary: Path, logs: Path) -> dict:
    cmd = toolbelt_command(config, binary, args) + [
        "--base-url", base_url, "--model", "qwen",
        "--max-steps", str(args.max_steps), "--context-window", str(args.ctx),
        "--yes", "--json", "--state-dir", str(tmp / "state"), "-p", task.prompt]
    stdout, stderr = Path(f"{logs}.events.jsonl"), Path(f"{logs}.stderr.txt")
    rc, wall, timed_out = run_process(cmd, work, clean_env(tmp), stdout, stderr, args.timeout)
    result = {"exit": rc, "wall_s": round(wall, 1), "timed_out": timed_out}
    err_text = stderr.read_text(errors="replace")
    if rc == 2 and re.search(r"unexpected argument|invalid value|unrecognized", err_text):
        return {**result, "status": "unavailable", "error": err_text.strip()[-300:]}
    steps_started, first_usage, ended, tool_calls, tool_errors = 0, None, None, 0, 0
    call_events, constraint, first_reply = 0, None, None
    for line in stdout.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "run_started" and constraint is None:
            constraint = event.get("constraint")
        elif kind == "step_started":
            steps_started += 1
        elif kind == "assistant_message" and first_reply is None:
            first_reply = event
        elif kind == "usage" and first_usage is None:
            first_usage = (event.get("step") or {}).get("input_tokens")
        elif kind == "tool_call":
            call_events += 1
        elif kind == "tool_result":
            tool_calls += 1
            tool_errors += event.get("status") == "error"
        elif kind == "run_ended":
            ended = event
    outcome = "timeout" if timed_out else (ended or {}).get("outcome", f"exit {rc}")
    answer = ended.get("message", "") if ended and ended.get("outcome") == "final_answer" else ""
    if rc not in (0, 1, None) and not ended:
        result["error"] = err_text.strip()[-500:]
    # A small model ends its run only through the finish tool, which has no tool_call event.
    small = "--model-size" in TOOLBELT_CONFIGS[config_parts(config)[0]][1]
    finished = small and (ended or {}).get("outcome") == "final_answer"
    said = re.search(r"^toolbelt: constraint: (.*)$", err_text, re.M)
    return {**result, "outcome": outcome, "answer": answer,
            "steps": ended.get("steps", steps_started) if ended else steps_started,
            "tool_calls": tool_calls, "tool_errors": tool_errors,
            "calls_made": max(call_events, tool_calls) + finished,
            "constraint": constraint, "constraint_said": said.group(1).strip() if said else None,
            "first_reply_imitates": imitates(first_reply.get("text")) if first_reply else None,
            "first_reply_calls": first_reply.get("tool_calls") if first_reply else None,
            "first_prompt_tokens_agent": first_usage}


def mini_sampling(args) -> list[str]:
    """mini-swe-agent's arguments for --temperature and --seed."""
    out = []
    if args.temperature is not None:
        out += ["-c", f"model.model_kwargs.temperature={args.temperature}"]
    if args.seed is not None:
        out += ["-c", f"model.model_kwargs.seed={args.seed}"]
    return out


def run_mini(task: Task, work: Path, tmp: Path, base_url: str, args, logs: Path) -> dict:
    if not MINI.exists():
        return {"status": "unavailable", "error": f"{MINI} is missing: run setup.sh"}
    traj = Path(f"{logs}.traj.json")
    cmd = [str(MINI), "-y", "--exit-immediately", "-m", "openai/qwen", "-t", task.prompt,
           "-c", "mini.yaml",
           "-c", f"agent.step_limit={args.max_steps}",
           "-c", "agent.cost_limit=0",
           "-c", f"model.model_kwargs.api_base={base_url}",
           "-c", "model.cost_tracking=ignore_errors",
           *mini_sampling(args),
           "-o", str(traj)]
    env = clean_env(tmp)
    env.update(MSWEA_CONFIGURED="true", MSWEA_SILENT_STARTUP="1", MSWEA_COST_TRACKING="ignore_errors",
               MSWEA_GLOBAL_CONFIG_DIR=str(tmp / "mini-config"), LITELLM_LOCAL_MODEL_COST_MAP="True",
               OPENAI_API_KEY="sk-local-no-key", NO_COLOR="1")
    stdout, stderr = Path(f"{logs}.stdout.txt"), Path(f"{logs}.stderr.txt")
    rc, wall, timed_out = run_process(cmd, work, env, stdout, stderr, args.timeout)
    result = {"exit": rc, "wall_s": round(wall, 1), "timed_out": timed_out}
    try:
        data = json.loads(traj.read_text())
    except (OSError, ValueError):
        err = (stderr.read_text(errors="replace") + stdout.read_text(errors="replace")).strip()
        return {**result, "outcome": "timeout" if timed_out else f"exit {rc}", "answer": "",
                "steps": None, "error": err[-500:]}
    return {**result, **read_trajectory(data, timed_out, rc)}


def text_of(content) -> str:
    """A message's content as text (a list of parts joined)."""
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def read_trajectory(data: dict, timed_out: bool = False, rc: int | None = 0) -> dict:
    """What a mini-swe-agent trajectory says of its run: outcome, answer, steps, calls,
    format errors, its first reply, and whether its commands went round (went_round)."""
    info = data.get("info") or {}
    messages = [m for m in data.get("messages") or [] if isinstance(m, dict)]
    status = info.get("exit_status") or ""
    answer = ""
    if status == "Submitted":
        last = next((m for m in reversed(messages) if m.get("role") == "assistant"), {})
        answer = (info.get("submission") or "") + "\n" + text_of(last.get("content"))
    # The outputs of the calls, by call id.
    outputs = {m.get("tool_call_id"): (m.get("extra") or {}) for m in messages
               if m.get("role") == "tool" and m.get("tool_call_id")}
    steps, actions, first_reply, first_calls = [], 0, None, None
    for m in messages[2:]:  # after the system message and the task
        extra = m.get("extra") or {}
        if m.get("role") == "assistant":
            calls = extra.get("actions") or []
            actions += len(calls)
            if first_reply is None:
                first_reply, first_calls = text_of(m.get("content")), len(calls)
            if calls:
                commands = [str(c.get("command")) for c in calls if isinstance(c, dict)]
                gave = [(outputs.get(c.get("tool_call_id")) or {}) for c in calls if isinstance(c, dict)]
                steps.append((commands, json.dumps([(g.get("returncode"), g.get("raw_output")) for g in gave])))
        elif extra.get("interrupt_type") == "FormatError" and first_reply is None:
            # A reply refused with a format error is kept only in the error's `response`.
            response = extra.get("response")
            try:
                reply = response["choices"][0]["message"]
            except (TypeError, KeyError, IndexError):
                reply = None
            if isinstance(reply, dict):
                first_reply, first_calls = text_of(reply.get("content")), len(reply.get("tool_calls") or [])
    format_errors = sum((m.get("extra") or {}).get("interrupt_type") == "FormatError" for m in messages)
    return {"outcome": "timeout" if timed_out else (status or f"exit {rc}"),
            "answer": answer.strip(), "steps": (info.get("model_stats") or {}).get("api_calls"),
            "tool_calls": actions, "calls_made": actions, "format_errors": format_errors,
            "constraint": None, "loop_seen": went_round(steps),
            "first_reply_imitates": imitates(first_reply) if first_reply is not None else None,
            "first_reply_calls": first_calls}


# --------------------------------------------------------------------------------------
# Reading a run: pure functions (see the top comment; --self-test tries a few cases)


def imitates(text: str | None) -> bool | None:
    """True when a reply writes a tool's result or an observation itself: <tool_response>,
    or a line starting with Observation or <|im_start|>."""
    return None if text is None else bool(IMITATION.search(text))


def went_round(steps: list[tuple[list[str], str]]) -> bool:
    """True when a run's steps (each: its calls, and what they gave) went round the way
    toolbelt's small-model guards stop: one call in REPEAT_STOP steps in a row (whatever
    it gave), or a cycle of 2 or 3 steps, not all alike, with the same calls and results
    CYCLE_STOP_ROUNDS rounds in a row."""
    streaks: dict[str, int] = {}
    for calls, _ in steps:
        streaks = {c: streaks.get(c, 0) + 1 for c in set(calls)}
        if any(n >= REPEAT_STOP for n in streaks.values()):
            return True
    keys = [(tuple(sorted(calls)), gave) for calls, gave in steps]
    for end in range(len(keys) + 1):
        for length in CYCLE_LENGTHS:
            if end < length * CYCLE_STOP_ROUNDS:
                continue
            round_ = keys[end - length:end]
            if all(k == round_[0] for k in round_):
                continue
            if all(keys[end - (r + 1) * length:end - r * length] == round_ for r in range(CYCLE_STOP_ROUNDS)):
                return True
    return False


def classify_failure(run: dict, solution: dict | None) -> str | None:
    """The failure class of a run (None when it solved the task): the first of FAILURES
    that applies. `run`: solved, timed_out, outcome, calls_made, changed_files,
    destroyed_files, loop_seen; `solution`: Task.solution()."""
    if run.get("solved"):
        return None
    solution = solution or {}
    sol_files = set(solution.get("files") or {})
    sol_destroyed = set(solution.get("destroyed") or [])
    changed = set(run.get("changed_files") or {})
    outcome = run.get("outcome") or ""
    if run.get("timed_out") or outcome in ("timeout", "TimeExceeded"):
        return "time cap"
    if set(run.get("destroyed_files") or []) - sol_destroyed:
        return "destroyed file"
    if outcome == "repeated_call" or (outcome == "LimitsExceeded" and run.get("loop_seen")):
        return "loop"
    if run.get("calls_made") == 0:
        return "no call"
    if sol_files and changed and (not changed & sol_files
                                  or (changed - sol_files and sol_files - changed)):
        return "wrong file"
    if outcome in ("max_steps", "LimitsExceeded"):
        return "step cap"
    if outcome in ("no_answer", "RepeatedFormatError"):
        return "no answer"
    if outcome in ("final_answer", "Submitted"):
        return "wrong answer"
    return "error"


def rewind_would_restore(changes: dict[str, str] | None, solution: dict | None) -> bool:
    """True when a run changed or deleted files the solution does not touch."""
    sol_files = (solution or {}).get("files") or {}
    return any(how in ("changed", "deleted") and path not in sol_files
               for path, how in (changes or {}).items())


# --------------------------------------------------------------------------------------
# The run


def run_one(config: str, task: Task, rep: int, args, server: LlamaServer, proxy: Proxy,
            recorder: Recorder, binary: Path, artifacts: Path) -> dict:
    run_id = f"{task.name}.{config}.{rep}.{secrets.token_hex(3)}"
    solution = task.solution()
    server.wait_idle()
    server.erase_cache()
    tmp = Path(tempfile.mkdtemp(prefix=f"tb-lm-{task.name}-{config}-"))
    try:
        work = task.make_workdir(tmp)
        (tmp / "state").mkdir()
        # + .events.jsonl, .stderr.txt, ...; from the second repetition on, TASK.CONFIG.rN.*
        logs = artifacts / (f"{task.name}.{config}" + (f".r{rep}" if rep > 1 else ""))
        base_url = proxy.base_url(run_id)
        if config == "mini":
            outcome = run_mini(task, work, tmp, base_url, args, logs)
        else:
            outcome = run_toolbelt(config, task, work, tmp, base_url, args, binary, logs)
        recorder.abort(run_id)  # a request still running for a killed agent
        server.wait_idle(120)
        if outcome.get("status") == "unavailable":
            return outcome
        changes, destroyed = file_changes(task.original, snapshot(work))  # before check.sh runs
        answer_file = tmp / "answer.txt"
        answer_file.write_text(outcome.get("answer") or "")
        solved, check_output = task.run_check(work, answer_file)
        chats = [r for r in recorder.get(run_id) if r.get("path", "").endswith("/chat/completions")]
        calls = [r for r in chats if not r.get("probe")]
        first = calls[0] if calls else {}
        first_tokens = first.get("prompt_tokens")
        if first_tokens is None and "prompt_n" in first:
            first_tokens = first["prompt_n"] + first.get("cache_n", 0)

        def total(key):
            return sum(r.get(key) or 0 for r in calls)

        record = {
            "status": "done", "solved": solved, **outcome, "check": check_output,
            "requests": len(calls), "first_prompt_tokens": first_tokens,
            "prompt_tokens": total("prompt_tokens"), "prompt_tokens_processed": total("prompt_n"),
            "completion_tokens": total("completion_tokens"),
            "model_s": round(sum(r.get("secs") or 0 for r in calls), 1),
            "truncated": sum(r.get("finish_reason") == "length" for r in calls),
            "http_errors": sum((r.get("status") or 0) >= 400 for r in calls),
            "probe_requests": len(chats) - len(calls),
            "wire": {k: first.get(k) for k in ("constraint", "temperature", "seed")} if calls else None,
            "changed_files": changes, "destroyed_files": destroyed,
            "solution_files": solution.get("files"),
        }
        record["failure"] = classify_failure(record, solution)
        record["rewind_would_restore"] = rewind_would_restore(changes, solution)
        record["answer"] = (record.get("answer") or "")[:500]
        if args.keep:
            record["dir"] = str(tmp)
        return record
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def version_of(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return (p.stdout + p.stderr).strip().splitlines()[-1] if (p.stdout + p.stderr).strip() else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def props_summary(props: dict) -> dict:
    settings = props.get("default_generation_settings") or {}
    return {
        "n_ctx": settings.get("n_ctx", props.get("n_ctx")),
        "total_slots": props.get("total_slots"),
        "chat_template_caps": props.get("chat_template_caps"),
        "build_info": props.get("build_info"),
        "model_path": props.get("model_path"),
    }


def known_config(config: str) -> bool:
    """A configuration of CONFIGS, or a toolbelt one with a temperature of its own
    (`constrained@0.8`, 0 to 2)."""
    name, _, temperature = config.partition("@")
    if not temperature:
        return name in CONFIGS and "@" not in config
    try:
        return name in TOOLBELT_CONFIGS and 0 <= float(temperature) <= 2
    except ValueError:
        return False


def parse_configs(given: str | None) -> list[str]:
    """--configs as configuration names (aliases resolved, each once), or the default set."""
    configs = []
    for name in (given.split(",") if given else DEFAULT_CONFIGS):
        name = name.strip()
        if name in ALIASES:
            log(f"configuration {name} is {ALIASES[name]} now")
            name = ALIASES[name]
        if name and name not in configs:
            configs.append(name)
    unknown = [c for c in configs if not known_config(c)]
    if unknown:
        sys.exit(f"unknown configurations: {', '.join(unknown)} (have: {', '.join(CONFIGS)}; "
                 f"{', '.join(f'{a} = {b}' for a, b in ALIASES.items())})")
    return configs


def bench(args) -> None:
    configs = parse_configs(args.configs)
    if args.repeat < 1:
        sys.exit("--repeat must be at least 1")
    tasks = load_tasks(args.tasks)
    for task in tasks:  # what solve.sh changes, once per task (and a broken fixture shows now)
        if error := task.solution().get("error"):
            log(f"{task.name}: {error}")

    binary = toolbelt_binary()
    features = None
    if any(config_parts(c)[0] in TOOLBELT_CONFIGS for c in configs):
        ensure_toolbelt(binary)
        features = toolbelt_features(binary)
    sampling = {f for f, v in (("temperature", args.temperature), ("seed", args.seed)) if v is not None}
    unavailable = {}
    for c in configs:
        name, own_temperature = config_parts(c)
        if name in TOOLBELT_CONFIGS:
            needs = TOOLBELT_CONFIGS[name][2] | sampling | ({"temperature"} if own_temperature is not None else set())
            if features is None:
                unavailable[c] = f"{binary} does not run"
            elif missing := needs - features:
                unavailable[c] = f"this toolbelt lacks {', '.join(sorted(missing))}"
        elif c == "mini" and not MINI.exists():
            unavailable[c] = f"{MINI} is missing"

    RESULTS_DIR.mkdir(exist_ok=True)
    if args.resume or args.out:
        out_path = Path(args.resume or args.out).resolve()  # the agents run elsewhere
    else:
        out_path = RESULTS_DIR / (datetime.datetime.now().strftime("%Y%m%d-%H%M%S") + ".jsonl")
    done = set()
    if out_path.exists():
        for rec in read_results(out_path):
            if rec.get("type") == "result" and rec.get("status") == "done":
                done.add((rec["config"], rec["task"], rec.get("rep", 1)))
    artifacts = out_path.with_suffix("")
    artifacts.mkdir(parents=True, exist_ok=True)
    out = open(out_path, "a")

    def write(rec: dict) -> None:
        out.write(json.dumps(rec) + "\n")
        out.flush()

    server = LlamaServer(args, artifacts)
    proxy = None
    try:
        server.wait_ready()
        props = props_summary(server.props())
        log(f"llama-server ready at {server.url}: {json.dumps(props)}")
        recorder = Recorder(artifacts / "requests.jsonl")
        proxy = Proxy(server.url, recorder)
        write({
            "type": "meta", "time": datetime.datetime.now().isoformat(timespec="seconds"),
            "model": MODEL.name, "server": props, "ctx": args.ctx,
            "template": None if args.server_url else template_path(args.template).name, "threads": args.threads,
            "max_steps": args.max_steps, "timeout_s": args.timeout, "configs": configs,
            "temperature": args.temperature, "seed": args.seed, "repeat": args.repeat,
            "commands": {c: " ".join(toolbelt_command(c, Path("toolbelt"), args))
                         if config_parts(c)[0] in TOOLBELT_CONFIGS
                         else "mini -y --exit-immediately -c mini.yaml " + " ".join(mini_sampling(args))
                         for c in configs},
            "tasks": [t.name for t in tasks],
            "solutions": {t.name: t.solution().get("files") for t in tasks},
            "toolbelt": version_of([str(binary), "--version"]) if features is not None else None,
            "toolbelt_bin": str(binary),
            "mini": version_of([str(MINI.parent / "python"), "-c",
                                "import importlib.metadata as m; print(m.version('mini-swe-agent'))"]),
            "unavailable": unavailable, "host": {"cpus": os.cpu_count(), "load": os.getloadavg()},
        })
        log(f"results: {out_path}")
        for rep in range(1, args.repeat + 1):
            for task in tasks:
                for config in configs:
                    base = {"type": "result", "config": config, "task": task.name, "kind": task.kind,
                            "rep": rep, "time": datetime.datetime.now().isoformat(timespec="seconds")}
                    if (config, task.name, rep) in done:
                        continue
                    if config in unavailable:
                        write({**base, "status": "unavailable", "error": unavailable[config]})
                        continue
                    rec = run_one(config, task, rep, args, server, proxy, recorder, binary, artifacts)
                    if rec.get("status") == "unavailable":
                        unavailable[config] = rec.get("error", "unavailable")
                    write({**base, **rec})
                    name = f"{task.name:10} {config:11}" + (f" #{rep}" if args.repeat > 1 else "")
                    if rec.get("status") == "done":
                        log(f"{name} {'solved' if rec['solved'] else 'failed':6} "
                            f"steps={rec.get('steps')} wall={rec.get('wall_s')}s "
                            f"first={rec.get('first_prompt_tokens')} outcome={rec.get('outcome')}"
                            + (f" failure={rec['failure']}" if rec.get("failure") else ""))
                    else:
                        log(f"{name} unavailable: {rec.get('error', '')[:200]}")
    finally:
        if proxy:
            proxy.stop()
        server.stop()
        out.close()
    print(report(out_path))


# --------------------------------------------------------------------------------------
# The report


def read_results(path: Path) -> list[dict]:
    records = []
    for line in Path(path).read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            pass
    return records


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(value, digits=0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def config_order(config: str) -> tuple[int, float]:
    name, temperature = config_parts(config)
    return (CONFIGS.index(name) if name in CONFIGS else len(CONFIGS),
            -1 if temperature is None else temperature)


def kind_order(name: str) -> int:
    return KINDS.index(name) if name in KINDS else len(KINDS)


def count_cell(values) -> str:
    """`tool_choice` when all alike, else `tool_choice 14, none 1`; – for none."""
    counts: dict[str, int] = {}
    for v in values:
        if v is not None:
            counts[str(v)] = counts.get(str(v), 0) + 1
    if not counts:
        return "–"
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def failure_of(r: dict) -> str | None:
    """The record's failure class (classified again from what it holds when it is older
    than the field)."""
    if r.get("solved"):
        return None
    if "failure" in r:
        return r["failure"]
    return classify_failure(r, {"files": r.get("solution_files") or {}})


def report(path: Path) -> str:
    records = read_results(path)
    meta = next((r for r in records if r.get("type") == "meta"), {})
    latest: dict[tuple[str, str, int], dict] = {}
    configs, tasks, reps = [], [], set()
    for r in records:
        if r.get("type") != "result":
            continue
        rep = r.get("rep", 1)
        latest[(r["config"], r["task"], rep)] = r
        reps.add(rep)
        if r["config"] not in configs:
            configs.append(r["config"])
        if r["task"] not in tasks:
            tasks.append(r["task"])
    configs.sort(key=config_order)
    reps = sorted(reps)
    kinds = sorted({re.sub(r"-\d+$", "", t) for t in tasks}, key=lambda k: (kind_order(k), k))

    def runs(config: str, task_filter=lambda t: True) -> list[dict]:
        """The config's finished runs (status done), task by task, repetition by repetition."""
        return [latest[(config, t, rep)] for t in tasks if task_filter(t) for rep in reps
                if (config, t, rep) in latest and latest[(config, t, rep)].get("status") == "done"]

    lines = []
    server = meta.get("server") or {}
    sampling = []
    if meta.get("temperature") is not None:
        sampling.append(f"temperature {meta['temperature']}")
    if meta.get("seed") is not None:
        sampling.append(f"seed {meta['seed']}")
    lines.append(f"Model {meta.get('model', '?')} on llama-server ({server.get('build_info', '?')}), "
                 f"chat template {meta.get('template') or '?'}, "
                 f"context {fmt(server.get('n_ctx') or meta.get('ctx'))}, {meta.get('threads', '?')} threads; "
                 f"cap {meta.get('max_steps', '?')} model calls and {meta.get('timeout_s', '?')} s per task; "
                 + (f"{len(reps)} repetitions; " if len(reps) > 1 else "")
                 + (", ".join(sampling) + " for every agent; " if sampling else "")
                 + (f"toolbelt {meta['toolbelt']}, " if meta.get("toolbelt") else "")
                 + f"mini-swe-agent {meta.get('mini', '?')}.")
    lines.append("")
    lines.append("| configuration | solved | median steps | median wall / task | median first-request tokens "
                 "| median prompt tokens processed / task | timeouts | first replies imitating a result "
                 "| first replies without a call | constraint |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for c in configs:
        done = runs(c)
        if not done:
            lines.append(f"| {c} | unavailable | | | | | | | | |")
            continue
        solved = sum(bool(r.get("solved")) for r in done)
        pct = 100 * solved / len(done)
        wall = median(r.get("wall_s") for r in done)
        known = [r["first_reply_imitates"] for r in done if r.get("first_reply_imitates") is not None]
        imitated = f"{sum(known)}/{len(known)}" if known else "–"
        calls = [r["first_reply_calls"] for r in done if r.get("first_reply_calls") is not None]
        no_call = f"{sum(n == 0 for n in calls)}/{len(calls)}" if calls else "–"
        lines.append(
            f"| {c} | {solved}/{len(done)} ({pct:.0f}%) | {fmt(median(r.get('steps') for r in done), 1)} "
            f"| {fmt(wall, 0)} s | {fmt(median(r.get('first_prompt_tokens') for r in done))} "
            f"| {fmt(median(r.get('prompt_tokens_processed') for r in done))} "
            f"| {sum(bool(r.get('timed_out')) for r in done)} | {imitated} | {no_call} "
            f"| {count_cell(r.get('constraint') for r in done)} |")
    lines.append("")
    lines.append("First replies imitating a result: runs whose first reply wrote a tool result or an observation "
                 "itself (<tool_response>, Observation, <|im_start|>), of the runs where that is known; "
                 "without a call: the first reply called no tool (prose, a plan, a refused format). "
                 "Constraint: how the server held each reply to a call, as toolbelt's run_started event "
                 "said.")
    lines.append("")
    lines.append("Solved per kind of task:")
    lines.append("")
    lines.append("| kind | " + " | ".join(configs) + " |")
    lines.append("|---|" + "---:|" * len(configs))
    for k in kinds:
        cells = []
        for c in configs:
            done = runs(c, lambda t: re.sub(r"-\d+$", "", t) == k)
            cells.append(f"{sum(bool(r.get('solved')) for r in done)}/{len(done)}" if done else "n/a")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines.append("")
    per_rep = " per repetition" if len(reps) > 1 else ""
    lines.append(f"Per task (✓ solved, ✗ not{per_rep}; model calls in brackets; t/o: stopped at the time cap):")
    lines.append("")
    lines.append("| task | " + " | ".join(configs) + " |")
    lines.append("|---|" + "---|" * len(configs))
    for t in tasks:
        cells = []
        for c in configs:
            rs = [latest[(c, t, rep)] for rep in reps if (c, t, rep) in latest]
            done = [r for r in rs if r.get("status") == "done"]
            if not rs:
                cells.append("")
            elif not done:
                cells.append("n/a")
            else:
                marks = "".join("✓" if r.get("solved") else "✗" for r in done)
                steps = ", ".join(str(r["steps"]) if r.get("steps") is not None else "?" for r in done)
                timeouts = sum(bool(r.get("timed_out")) for r in done)
                extra = "" if not timeouts else " t/o" if len(done) == 1 else f" {timeouts} t/o"
                cells.append(f"{marks} ({steps}){extra}")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Why runs failed (each unsolved run in the first class that applies, left to right):")
    lines.append("")
    lines.append("| configuration | unsolved | " + " | ".join(FAILURES) + " | rewind would restore |")
    lines.append("|---|---:|" + "---:|" * len(FAILURES) + "---:|")
    rewinds, rewinds_unsolved, all_runs = 0, 0, 0
    for c in configs:
        done = runs(c)
        if not done:
            continue
        failures = [failure_of(r) for r in done]
        failed = [f for f in failures if f is not None]
        counts = [sum(f == cls for f in failed) for cls in FAILURES]
        unclassified = len(failed) - sum(counts)  # a class this report does not know
        rewind = [r for r in done if r.get("rewind_would_restore")]
        rewinds += len(rewind)
        rewinds_unsolved += sum(not r.get("solved") for r in rewind)
        all_runs += len(done)
        lines.append(f"| {c} | {len(failed)}{f' ({unclassified} other)' if unclassified else ''} | "
                     + " | ".join(str(n) if n else "·" for n in counts) + f" | {len(rewind) or '·'} |")
    lines.append("")
    lines.append(f"A rewind to the start of the run would have given back files the solution does not touch "
                 f"in {rewinds} of {all_runs} runs ({rewinds_unsolved} of them unsolved).")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Self-test of the fixtures: each check fails on the files as given and passes once solved.


def self_test(selection: str | None) -> None:
    bad = unit_tests()
    for task in load_tasks(selection):
        with tempfile.TemporaryDirectory(prefix=f"tb-lm-selftest-{task.name}-") as tmp:
            tmp = Path(tmp)
            work = task.make_workdir(tmp)
            answer = tmp / "answer.txt"
            answer.write_text("")
            before, _ = task.run_check(work, answer)
            solve = task.dir / "solve.sh"
            subprocess.run(["bash", str(solve), str(answer)], cwd=work, check=True)
            after, out = task.run_check(work, answer)
            solution = task.solution()
            changes, _ = file_changes(task.original, snapshot(work))
            # The solution changes files where the task is to change files, none for find-*.
            files_ok = changes == solution["files"] and bool(changes) != (task.kind == "find")
            ok = not before and after and files_ok and not solution.get("destroyed")
            bad += not ok
            print(f"{task.name:10} {'ok' if ok else 'BAD'}  unsolved: {'pass' if before else 'fail'}, "
                  f"solved: {'pass' if after else 'fail ' + out}; solve.sh: "
                  + (", ".join(f"{p} {how}" for p, how in changes.items()) or "no files changed")
                  + ("" if files_ok else f" (BAD: once more {solution['files']})"))
    sys.exit(1 if bad else 0)


def unit_tests() -> int:
    """The pure functions that read a run, on a few cases; the number that fail."""
    sol = {"files": {"stats.py": "changed"}, "destroyed": []}
    create = {"files": {"hello.py": "created"}, "destroyed": []}
    find = {"files": {}, "destroyed": []}
    ran = {"solved": False, "outcome": "final_answer", "calls_made": 3, "changed_files": {"stats.py": "changed"}}
    cases = [
        ("solved", classify_failure({**ran, "solved": True}, sol), None),
        ("time cap first", classify_failure({**ran, "timed_out": True, "outcome": "timeout",
                                             "destroyed_files": ["stats.py"]}, sol), "time cap"),
        ("destroyed", classify_failure({**ran, "outcome": "repeated_call", "destroyed_files": ["test_stats.py"],
                                        "changed_files": {"test_stats.py": "deleted"}}, sol), "destroyed file"),
        ("destroyed as the solution does", classify_failure(
            {**ran, "destroyed_files": ["old.py"], "changed_files": {"old.py": "deleted"}},
            {"files": {"old.py": "deleted"}, "destroyed": ["old.py"]}),
         "wrong answer"),
        ("loop", classify_failure({**ran, "outcome": "repeated_call"}, sol), "loop"),
        ("mini loop", classify_failure({**ran, "outcome": "LimitsExceeded", "loop_seen": True}, sol), "loop"),
        ("mini loop, submitted later", classify_failure({**ran, "outcome": "Submitted", "loop_seen": True}, sol),
         "wrong answer"),
        ("no call", classify_failure({**ran, "outcome": "no_answer", "calls_made": 0, "changed_files": {}}, sol),
         "no call"),
        ("wrong file: none of the solution's", classify_failure(
            {**ran, "outcome": "max_steps", "changed_files": {"test_stats.py": "changed"}}, sol), "wrong file"),
        ("wrong file: another, solution file left", classify_failure(
            {**ran, "changed_files": {"hello.py": "created", "README.md": "changed"}},
            {"files": {"hello.py": "created", "main.py": "changed"}}), "wrong file"),
        ("scratch file beside the solution's", classify_failure(
            {**ran, "outcome": "max_steps", "changed_files": {"stats.py": "changed", "repro.py": "created"}}, sol),
         "step cap"),
        ("one of two solution files", classify_failure(
            {**ran, "outcome": "no_answer", "changed_files": {"a.py": "changed"}},
            {"files": {"a.py": "changed", "b.py": "changed"}}), "no answer"),
        ("find: files do not decide", classify_failure(
            {**ran, "changed_files": {"notes.txt": "created"}}, find), "wrong answer"),
        ("step cap", classify_failure({**ran, "outcome": "max_steps"}, sol), "step cap"),
        ("mini step cap, another file changed", classify_failure({**ran, "outcome": "LimitsExceeded"}, create), "wrong file"),
        ("mini format errors", classify_failure({**ran, "outcome": "RepeatedFormatError", "changed_files": {}},
                                                sol), "no answer"),
        ("mini submitted", classify_failure({**ran, "outcome": "Submitted"}, sol), "wrong answer"),
        ("error", classify_failure({**ran, "outcome": "error"}, sol), "error"),
        ("crash, calls unknown", classify_failure({"solved": False, "outcome": "exit 1", "calls_made": None}, sol),
         "error"),
        ("rewind: changed another file", rewind_would_restore({"test_stats.py": "changed"}, sol), True),
        ("rewind: deleted another file", rewind_would_restore({"README.md": "deleted"}, create), True),
        ("rewind: created files only", rewind_would_restore({"repro.py": "created", "stats.py": "changed"}, sol),
         False),
        ("imitates <tool_response>", imitates("<tool_response>\n{...}\n</tool_response>"), True),
        ("imitates Observation line", imitates("I will read it.\nObservation: 3 lines"), True),
        ("imitates <|im_start|>", imitates("<|im_start|>user\nhi"), True),
        ("a call is no imitation", imitates('<tool_call>\n{"name": "read_file"}\n</tool_call>'), False),
        ("Observation inside a line", imitates("No Observation yet"), False),
        ("unknown", imitates(None), None),
        ("went round: 4 in a row", went_round([(["ls"], "1"), (["ls"], "2"), (["ls"], "3"), (["ls"], "4")]), True),
        ("went round: 3 in a row", went_round([(["ls"], "1")] * 3), False),
        ("went round: A-B x3", went_round([(["a"], "1"), (["b"], "2")] * 3), True),
        ("went round: A-B x2", went_round([(["a"], "1"), (["b"], "2")] * 2), False),
        ("went round: A-B-C x3 after others", went_round(
            [(["x"], "0")] + [(["a"], "1"), (["b"], "2"), (["c"], "3")] * 3), True),
        ("went round: A-B, results change", went_round(
            [(["a"], "1"), (["b"], "2"), (["a"], "3"), (["b"], "4"), (["a"], "5"), (["b"], "6")]), False),
    ]
    before = {"a.py": b"1\n2\n3\n4\n", "b.py": b"x\n", "c.py": b"1\n2\n3\n4\n"}
    after = {"a.py": b"1\n", "b.py": b"y\n", "d.py": b"new\n", "c.py": b"1\n2\n"}
    cases.append(("file_changes", file_changes(before, after),
                  ({"a.py": "changed", "b.py": "changed", "c.py": "changed", "d.py": "created"}, ["a.py"])))
    cases.append(("file_changes: deleted", file_changes({"a.py": b""}, {}), ({"a.py": "deleted"}, ["a.py"])))
    with tempfile.TemporaryDirectory(prefix="tb-lm-selftest-") as tmp:
        root = Path(tmp)
        for rel in ("x.py", "pkg/y.py", ".git/HEAD", "pkg/__pycache__/y.cpython-312.pyc", ".toolbelt/k",
                    "z.pyc"):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(rel)
        cases.append(("snapshot leaves out", sorted(snapshot(root)), ["pkg/y.py", "x.py"]))
    traj = {
        "info": {"exit_status": "LimitsExceeded", "model_stats": {"api_calls": 6}},
        "messages": [
            {"role": "system", "content": "s"}, {"role": "user", "content": "task"},
            {"role": "user", "content": "Tool call error", "extra": {
                "interrupt_type": "FormatError",
                "response": {"choices": [{"message": {"content": "<tool_response>ok</tool_response>"}}]}}},
        ] + [m for i in range(5) for m in (
            {"role": "assistant", "content": "again", "extra": {"actions": [
                {"command": "cat a.py", "tool_call_id": f"c{i}"}]}},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "{}", "extra": {"raw_output": "x", "returncode": 0}},
        )] + [{"role": "exit", "content": "LimitsExceeded", "extra": {"exit_status": "LimitsExceeded"}}],
    }
    got = read_trajectory(traj)
    cases.append(("trajectory", {k: got[k] for k in ("outcome", "calls_made", "format_errors", "loop_seen",
                                                     "first_reply_imitates", "first_reply_calls")},
                  {"outcome": "LimitsExceeded", "calls_made": 5, "format_errors": 1, "loop_seen": True,
                   "first_reply_imitates": True, "first_reply_calls": 0}))
    cases.append(("trajectory: classified", classify_failure({**got, "solved": False}, sol), "loop"))
    bad = 0
    for name, got, want in cases:
        if got != want:
            bad += 1
            print(f"unit BAD  {name}: got {got!r}, want {want!r}")
    print(f"unit       {'ok' if not bad else 'BAD'}  {len(cases) - bad}/{len(cases)} cases of the run readers")
    return bad


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", help=f"comma-separated, of {','.join(CONFIGS)} (auto = constrained; "
                                     f"default: {','.join(DEFAULT_CONFIGS)})")
    p.add_argument("--tasks", help="comma-separated task names or kinds (default: all)")
    p.add_argument("--max-steps", type=int, default=15, help="model calls per task (default 15)")
    p.add_argument("--timeout", type=float, default=600, help="wall seconds per task (default 600)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="runs of each (task, configuration), each a record with its `rep` (default 1)")
    p.add_argument("--temperature", type=float, metavar="T",
                   help="sampling temperature for every agent (default: toolbelt's own, 0.2 for the "
                        "small-model configurations; the server's for native and mini)")
    p.add_argument("--seed", type=int, metavar="N", help="sampling seed for every agent (default: none)")
    p.add_argument("--ctx", type=int, default=16384, help="llama-server context (default 16384)")
    p.add_argument("--threads", type=int, default=2, help="llama-server threads (default 2)")
    p.add_argument("--template", default="tools",
                   help="llama-server's chat template: tools (qwen2.5-tools.jinja, <tool_call> tags), "
                        "fenced (qwen2.5-coder-fenced.jinja, ```json blocks) or a file (default tools)")
    p.add_argument("--server-arg", action="append", default=[],
                   help="one more llama-server argument (repeatable: --server-arg=--temp --server-arg=0.2)")
    p.add_argument("--server-url", help="use this running llama-server instead of starting one")
    p.add_argument("--out", help="results file (default results/<time>.jsonl)")
    p.add_argument("--resume", help="append to this results file, skipping what it has measured")
    p.add_argument("--keep", action="store_true", help="keep the task directories")
    p.add_argument("--report", metavar="FILE", help="print the tables of a results file and exit")
    p.add_argument("--self-test", action="store_true", help="check the task fixtures and exit")
    p.add_argument("--list", action="store_true", help="list the tasks and exit")
    args = p.parse_args()
    if args.report:
        print(report(Path(args.report)))
    elif args.self_test:
        self_test(args.tasks)
    elif args.list:
        for t in load_tasks(args.tasks):
            print(f"{t.name:10} {t.prompt}")
    else:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        bench(args)


if __name__ == "__main__":
    main()
