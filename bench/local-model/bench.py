#!/usr/bin/env python3
"""The local-model bench: toolbelt's agent against mini-swe-agent on one small model.

What it measures
    Every configuration works on the same small coding tasks (tasks/NAME/: task.txt, the
    starting files in files/, check.sh), each in a fresh temporary directory, with the
    same model behind the same llama-server, the same cap of model calls (--max-steps,
    default 15) and the same wall-clock cap per task (--timeout, default 600 s).
    For each (configuration, task) it records:
      solved               check.sh exits 0 in the task directory after the run (for the
                           find-* tasks check.sh reads the agent's final answer, $1)
      steps                model calls, as the agent counts them (toolbelt: the run_ended
                           event's `steps`; mini-swe-agent: its trajectory's api_calls)
      wall_s               wall time of the whole agent process, start-up included
      first_prompt_tokens  llama-server's own usage.prompt_tokens of the run's first
                           request: the system prompt, the tool schemas and the task
    plus the requests the server saw, the prompt tokens it processed, the tokens it
    generated, and how the run ended. The requests pass through a small recording
    reverse proxy on another loopback port (stream-transparent: SSE lines are forwarded
    as they come), one URL prefix per run, so the token counts come from the server for
    both agents alike.

The configurations
    native  toolbelt --tools coding agent --protocol native
    text    toolbelt --tools coding agent --protocol text
    lean    toolbelt agent --model-size small --protocol native
    auto    toolbelt agent --model-size small --protocol auto
    mini    mini-swe-agent 2.4.6 (PyPI), `mini -y --exit-immediately` with its default
            mini.yaml, litellm's openai/ provider, the local environment (no docker)
    All toolbelt runs get --max-steps, --yes, --json, a fresh --state-dir and
    --context-window (the server's context, so toolbelt compacts instead of
    overflowing it). A configuration the toolbelt binary does not know yet is reported
    as "unavailable". The configurations alternate task by task (task 1: native, text,
    lean, auto, mini; task 2: ...), so that noise from the machine hits all alike.
    The server runs one slot (-np 1) without the host-memory prompt cache
    (--cache-ram 0), and the slot's cache is erased before each run: no run starts
    with a prompt another run left behind. -n 4096 caps an answer whose request sets
    no max_tokens (mini-swe-agent's; toolbelt asks for 2048 at most from a local
    server), so that a model stuck repeating itself does not run to the time cap.

The chat template (--template)
    tools   qwen2.5-tools.jinja: Qwen2.5's own format, calls in <tool_call> tags. The
            1.5B coder model mostly writes its calls as ```json blocks instead, which
            this llama-server returns as plain content: toolbelt runs calls written in
            the text as calls; mini-swe-agent answers them with a format error.
    fenced  qwen2.5-coder-fenced.jinja: calls as ```json blocks, which llama-server
            then returns as tool_calls.

The final answer (find-* tasks)
    toolbelt: the run_ended event's message when the outcome is final_answer.
    mini-swe-agent: when it submitted (exit status Submitted), its submission (the output
    after the COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT line) and the text of the reply that
    submitted.

How to run
    bench/local-model/run.sh                                  # everything (takes hours)
    bench/local-model/run.sh --configs lean,mini --tasks bugfix-1,rename-1
    bench/local-model/run.sh --tasks find                     # a kind: find-1, find-2, ...
    bench/local-model/run.sh --template fenced                # the other chat template
    bench/local-model/run.sh --resume results/20250101-120000.jsonl   # finish a run
    python3 bench/local-model/bench.py --report results/20250101-120000.jsonl
    python3 bench/local-model/bench.py --self-test            # checks fail as given, pass solved
    Results go to results/RUN.jsonl (one JSON object a line, written as measured), the
    agents' logs to results/RUN/, llama-server's log to results/RUN/server.log.
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

CONFIGS = ["native", "text", "lean", "auto", "mini"]
TOOLBELT_CONFIGS = {
    # name: (arguments before `agent`, arguments after it, features the binary needs)
    "native": (["--tools", "coding"], ["--protocol", "native"], set()),
    "text": (["--tools", "coding"], ["--protocol", "text"], set()),
    "lean": ([], ["--model-size", "small", "--protocol", "native"], {"model-size"}),
    "auto": ([], ["--model-size", "small", "--protocol", "auto"], {"model-size", "protocol-auto"}),
}


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
        record = {"path": path, "t": time.time()}
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
    if "--model-size" in text:
        features.add("model-size")
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


def run_toolbelt(config: str, task: Task, work: Path, tmp: Path, base_url: str, args,
                 binary: Path, logs: Path) -> dict:
    before, after, _ = TOOLBELT_CONFIGS[config]
    cmd = [str(binary), *before, "agent", *after,
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
    for line in stdout.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("type")
        if kind == "step_started":
            steps_started += 1
        elif kind == "usage" and first_usage is None:
            first_usage = (event.get("step") or {}).get("input_tokens")
        elif kind == "tool_result":
            tool_calls += 1
            tool_errors += event.get("status") == "error"
        elif kind == "run_ended":
            ended = event
    outcome = "timeout" if timed_out else (ended or {}).get("outcome", f"exit {rc}")
    answer = ended.get("message", "") if ended and ended.get("outcome") == "final_answer" else ""
    if rc not in (0, 1, None) and not ended:
        result["error"] = err_text.strip()[-500:]
    return {**result, "outcome": outcome, "answer": answer,
            "steps": ended.get("steps", steps_started) if ended else steps_started,
            "tool_calls": tool_calls, "tool_errors": tool_errors,
            "first_prompt_tokens_agent": first_usage}


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
    info = data.get("info", {})
    messages = data.get("messages", [])
    status = info.get("exit_status") or ""
    answer = ""
    if status == "Submitted":
        last = next((m for m in reversed(messages) if m.get("role") == "assistant"), {})
        content = last.get("content") or ""
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        answer = (info.get("submission") or "") + "\n" + content
    actions = sum(len((m.get("extra") or {}).get("actions") or []) for m in messages
                  if m.get("role") == "assistant")
    format_errors = sum((m.get("extra") or {}).get("interrupt_type") == "FormatError" for m in messages)
    return {**result, "outcome": "timeout" if timed_out else (status or f"exit {rc}"),
            "answer": answer.strip(), "steps": (info.get("model_stats") or {}).get("api_calls"),
            "tool_calls": actions, "format_errors": format_errors}


# --------------------------------------------------------------------------------------
# The run


def run_one(config: str, task: Task, args, server: LlamaServer, proxy: Proxy, recorder: Recorder,
            binary: Path, artifacts: Path) -> dict:
    run_id = f"{task.name}.{config}.{secrets.token_hex(3)}"
    server.wait_idle()
    server.erase_cache()
    tmp = Path(tempfile.mkdtemp(prefix=f"tb-lm-{task.name}-{config}-"))
    try:
        work = task.make_workdir(tmp)
        (tmp / "state").mkdir()
        logs = artifacts / f"{task.name}.{config}"  # + .events.jsonl, .stderr.txt, ...
        base_url = proxy.base_url(run_id)
        if config == "mini":
            outcome = run_mini(task, work, tmp, base_url, args, logs)
        else:
            outcome = run_toolbelt(config, task, work, tmp, base_url, args, binary, logs)
        recorder.abort(run_id)  # a request still running for a killed agent
        server.wait_idle(120)
        if outcome.get("status") == "unavailable":
            return outcome
        answer_file = tmp / "answer.txt"
        answer_file.write_text(outcome.get("answer") or "")
        solved, check_output = task.run_check(work, answer_file)
        calls = [r for r in recorder.get(run_id) if r.get("path", "").endswith("/chat/completions")]
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
        }
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


def bench(args) -> None:
    configs = [c.strip() for c in (args.configs or ",".join(CONFIGS)).split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        sys.exit(f"unknown configurations: {', '.join(unknown)} (have: {', '.join(CONFIGS)})")
    tasks = load_tasks(args.tasks)

    binary = toolbelt_binary()
    features = None
    if any(c in TOOLBELT_CONFIGS for c in configs):
        ensure_toolbelt(binary)
        features = toolbelt_features(binary)
    unavailable = {}
    for c in configs:
        if c in TOOLBELT_CONFIGS:
            if features is None:
                unavailable[c] = f"{binary} does not run"
            elif missing := TOOLBELT_CONFIGS[c][2] - features:
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
                done.add((rec["config"], rec["task"]))
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
            "tasks": [t.name for t in tasks],
            "toolbelt": version_of([str(binary), "--version"]) if features is not None else None,
            "toolbelt_bin": str(binary),
            "mini": version_of([str(MINI.parent / "python"), "-c",
                                "import importlib.metadata as m; print(m.version('mini-swe-agent'))"]),
            "unavailable": unavailable, "host": {"cpus": os.cpu_count(), "load": os.getloadavg()},
        })
        log(f"results: {out_path}")
        for task in tasks:
            for config in configs:
                base = {"type": "result", "config": config, "task": task.name, "kind": task.kind,
                        "time": datetime.datetime.now().isoformat(timespec="seconds")}
                if (config, task.name) in done:
                    continue
                if config in unavailable:
                    write({**base, "status": "unavailable", "error": unavailable[config]})
                    continue
                rec = run_one(config, task, args, server, proxy, recorder, binary, artifacts)
                if rec.get("status") == "unavailable":
                    unavailable[config] = rec.get("error", "unavailable")
                write({**base, **rec})
                if rec.get("status") == "done":
                    log(f"{task.name:10} {config:6} {'solved' if rec['solved'] else 'failed':6} "
                        f"steps={rec.get('steps')} wall={rec.get('wall_s')}s "
                        f"first={rec.get('first_prompt_tokens')} outcome={rec.get('outcome')}")
                else:
                    log(f"{task.name:10} {config:6} unavailable: {rec.get('error', '')[:200]}")
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


def report(path: Path) -> str:
    records = read_results(path)
    meta = next((r for r in records if r.get("type") == "meta"), {})
    latest: dict[tuple[str, str], dict] = {}
    configs, tasks = [], []
    for r in records:
        if r.get("type") != "result":
            continue
        latest[(r["config"], r["task"])] = r
        if r["config"] not in configs:
            configs.append(r["config"])
        if r["task"] not in tasks:
            tasks.append(r["task"])
    configs.sort(key=lambda c: CONFIGS.index(c) if c in CONFIGS else len(CONFIGS))
    lines = []
    server = meta.get("server") or {}
    lines.append(f"Model {meta.get('model', '?')} on llama-server ({server.get('build_info', '?')}), "
                 f"chat template {meta.get('template') or '?'}, "
                 f"context {fmt(server.get('n_ctx') or meta.get('ctx'))}, {meta.get('threads', '?')} threads; "
                 f"cap {meta.get('max_steps', '?')} model calls and {meta.get('timeout_s', '?')} s per task; "
                 + (f"toolbelt {meta['toolbelt']}, " if meta.get("toolbelt") else "")
                 + f"mini-swe-agent {meta.get('mini', '?')}.")
    lines.append("")
    lines.append("| configuration | solved | median steps | median wall / task | median first-request tokens "
                 "| median prompt tokens processed / task | timeouts |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    for c in configs:
        rows = [latest[(c, t)] for t in tasks if (c, t) in latest]
        done = [r for r in rows if r.get("status") == "done"]
        if not done:
            lines.append(f"| {c} | unavailable | | | | | |")
            continue
        solved = sum(bool(r.get("solved")) for r in done)
        pct = 100 * solved / len(done)
        wall = median(r.get("wall_s") for r in done)
        lines.append(
            f"| {c} | {solved}/{len(done)} ({pct:.0f}%) | {fmt(median(r.get('steps') for r in done), 1)} "
            f"| {fmt(wall, 0)} s | {fmt(median(r.get('first_prompt_tokens') for r in done))} "
            f"| {fmt(median(r.get('prompt_tokens_processed') for r in done))} "
            f"| {sum(bool(r.get('timed_out')) for r in done)} |")
    lines.append("")
    lines.append("Per task (✓ solved, ✗ not; model calls in brackets; t/o: stopped at the time cap):")
    lines.append("")
    lines.append("| task | " + " | ".join(configs) + " |")
    lines.append("|---|" + "---|" * len(configs))
    for t in tasks:
        cells = []
        for c in configs:
            r = latest.get((c, t))
            if r is None:
                cells.append("")
            elif r.get("status") != "done":
                cells.append("n/a")
            else:
                mark = "✓" if r.get("solved") else "✗"
                steps = r.get("steps")
                extra = " t/o" if r.get("timed_out") else ""
                cells.append(f"{mark} ({steps if steps is not None else '?'}){extra}")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------
# Self-test of the fixtures: each check fails on the files as given and passes once solved.


def self_test(selection: str | None) -> None:
    bad = 0
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
            ok = not before and after
            bad += not ok
            print(f"{task.name:10} {'ok' if ok else 'BAD'}  unsolved: {'pass' if before else 'fail'}, "
                  f"solved: {'pass' if after else 'fail ' + out}")
    sys.exit(1 if bad else 0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", help=f"comma-separated, of {','.join(CONFIGS)} (default: all)")
    p.add_argument("--tasks", help="comma-separated task names or kinds (default: all)")
    p.add_argument("--max-steps", type=int, default=15, help="model calls per task (default 15)")
    p.add_argument("--timeout", type=float, default=600, help="wall seconds per task (default 600)")
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
