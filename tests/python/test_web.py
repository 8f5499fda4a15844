"""The web page of `toolbelt serve` in a real browser: Debian's headless Chromium driven
by Selenium (chromium + chromium-driver; .ci/run installs them).

Logs in with the token, sees the catalogue, fills the forms of `think` and `write_file`
(the file appears in the root), sees both calls in the call log (and one more arriving
live), sees a project made through the API in the planner with its stats, the todo
list as seed 000 renders it, keyboard tabs, dark mode and 200% zoom; reads an agent run
from a transcript (each call by its summary, its result folded) and a cron job made
through the API (next run in its zone, last run); answers the question a prompt job's
scripted model asks (the `scripted_provider` example beside the binary, as in
test_providers.py) and sees the answer in the model's next request; no errors in the
browser console. Screenshots go to $TOOLBELT_ARTIFACTS/web (default: a temporary
directory, printed). The page must load in under 300 ms from a cold server
(navigation timing); the figures are printed.

The binary under test comes from the environment: TOOLBELT_BIN=/path/to/toolbelt.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER_START_TIMEOUT_S = 30.0
WAIT_S = 15.0
# The page, from navigation start to the load event, on a server that has just started.
MAX_LOAD_MS = 300.0
CHROMIUM_CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
DRIVER_CANDIDATES = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]


def find(candidates: list[str], name: str) -> str | None:
    for path in candidates:
        if os.access(path, os.X_OK):
            return path
    return shutil.which(name)


CHROMIUM = find(CHROMIUM_CANDIDATES, "chromium")
CHROMEDRIVER = find(DRIVER_CANDIDATES, "chromedriver")

if CHROMIUM is None or CHROMEDRIVER is None:
    message = (
        "\n\n!!! test_web.py SKIPPED: no Chromium here "
        f"(chromium: {CHROMIUM}, chromedriver: {CHROMEDRIVER}); "
        "install Debian's chromium and chromium-driver (.ci/run does) !!!\n"
    )
    print(message, file=sys.stderr)
    pytest.skip(message, allow_module_level=True)

from selenium import webdriver  # noqa: E402 (only once the browser is known to be there)
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


@pytest.fixture(scope="session")
def toolbelt_bin() -> str:
    path = os.environ.get("TOOLBELT_BIN", "")
    if not path or not os.access(path, os.X_OK):
        raise pytest.UsageError(f"set TOOLBELT_BIN to an executable toolbelt binary (got {path!r})")
    return path


@pytest.fixture(scope="session")
def artifacts() -> Path:
    base = os.environ.get("TOOLBELT_ARTIFACTS") or str(Path(tempfile.gettempdir()) / "toolbelt-artifacts")
    path = Path(base) / "web"
    path.mkdir(parents=True, exist_ok=True)
    print(f"\nscreenshots of the web page: {path}", file=sys.stderr)
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, base: str, token: str, root: Path, log: Path, proc: subprocess.Popen[bytes]) -> None:
        self.base = base
        self.token = token
        self.root = root
        self.log = log
        self.proc = proc

    def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Calls a tool through the JSON API with the bearer token."""
        request = urllib.request.Request(
            f"{self.base}/v1/tools/{tool}",
            data=json.dumps(args).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            envelope = json.load(response)
        assert envelope["status"] == "success", envelope
        return envelope


def start_server(toolbelt_bin: str, tmp: Path, *extra: str, env_drop: tuple[str, ...] = ()) -> Server:
    port = free_port()
    token = secrets.token_hex(24)
    root = tmp / "root"
    root.mkdir()
    state = tmp / "state"
    state.mkdir()
    log_path = tmp / "serve.log"
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [toolbelt_bin, "serve", "--bind", f"127.0.0.1:{port}", f"--token={token}",
         "--root", str(root), "--state-dir", str(state), *extra],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**{k: v for k, v in os.environ.items() if k not in env_drop},
             "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
    )
    log.close()
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"toolbelt serve exited ({proc.returncode}): {log_path.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError("toolbelt serve did not start listening") from None
            time.sleep(0.02)
    return Server(f"http://127.0.0.1:{port}", token, root, log_path, proc)


def stop_server(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()
    assert server.proc.returncode == 0, f"toolbelt serve exited with {server.proc.returncode} on SIGTERM"
    assert server.token not in server.log.read_text(), "the token is never logged"


@pytest.fixture
def server(toolbelt_bin: str, tmp_path: Path) -> Iterator[Server]:
    s = start_server(toolbelt_bin, tmp_path)
    try:
        yield s
    finally:
        stop_server(s)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1280,900",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The system's driver: nothing is downloaded.
    os.environ["SE_OFFLINE"] = "true"
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: webdriver.Chrome, condition: Any, what: str) -> Any:
    return WebDriverWait(driver, WAIT_S).until(condition, message=f"waiting for {what}")


def navigation_ms(driver: webdriver.Chrome) -> dict[str, float]:
    """Navigation timing of the current page, in ms from navigation start."""
    wait(driver, lambda d: d.execute_script(
        "var n = performance.getEntriesByType('navigation')[0]; return n && n.loadEventEnd > 0;"), "the load event")
    timing = driver.execute_script(
        "var n = performance.getEntriesByType('navigation')[0];"
        "return {response: n.responseEnd, dom: n.domContentLoadedEventEnd, load: n.loadEventEnd};")
    return {k: round(float(v), 1) for k, v in timing.items()}


def console_errors(driver: webdriver.Chrome) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def shot(driver: webdriver.Chrome, artifacts: Path, name: str) -> None:
    driver.save_screenshot(str(artifacts / f"{name}.png"))


def log_in(driver: webdriver.Chrome, server: Server) -> None:
    field = wait(driver, ec.visibility_of_element_located((By.ID, "token")), "the token field")
    field.send_keys(server.token)
    driver.find_element(By.ID, "login").click()
    wait(driver, ec.presence_of_element_located((By.CSS_SELECTOR, "#catalogue button[data-tool='think']")),
         "the catalogue")


def open_tool(driver: webdriver.Chrome, name: str) -> None:
    driver.find_element(By.CSS_SELECTOR, f"#catalogue button[data-tool='{name}']").click()
    wait(driver, ec.text_to_be_present_in_element((By.ID, "tool-heading"), name), f"the form of {name}")


def field(driver: webdriver.Chrome, name: str) -> Any:
    return driver.find_element(By.CSS_SELECTOR, f"#tool-form [name='{name}']")


def run_and_wait(driver: webdriver.Chrome) -> str:
    driver.find_element(By.ID, "run").click()
    badge = wait(driver, ec.visibility_of_element_located((By.CSS_SELECTOR, "#result h3 .badge")), "the envelope")
    return badge.text


def test_the_page_in_a_browser(server: Server, browser: webdriver.Chrome, artifacts: Path) -> None:
    d = browser
    # A cold server: its first page.
    d.get(f"{server.base}/")
    login_timing = navigation_ms(d)
    shot(d, artifacts, "01-login")
    assert d.find_element(By.ID, "token").get_attribute("type") == "password"

    # A wrong token first: refused, with a message.
    d.find_element(By.ID, "token").send_keys("not-the-token")
    d.find_element(By.ID, "login").click()
    error = wait(d, ec.visibility_of_element_located((By.ID, "login-error")), "the refusal")
    assert "wrong" in error.text
    # The 401 page itself is what the browser logs as a failed resource; clear it.
    wrong_login_log = d.get_log("browser")

    log_in(d, server)
    app_timing = navigation_ms(d)
    cookies = d.get_cookies()
    assert len(cookies) == 1, cookies
    assert cookies[0]["httpOnly"] is True and cookies[0]["sameSite"] == "Strict", cookies
    assert d.execute_script("return document.cookie") == "", "the session cookie is out of the scripts' reach"

    # The catalogue, by category.
    categories = [h.text.lower() for h in d.find_elements(By.CSS_SELECTOR, "#catalogue h3")]
    assert len(categories) >= 3, categories
    shot(d, artifacts, "02-catalogue")

    # think, through its form.
    open_tool(d, "think")
    thought = field(d, "thought")
    assert thought.get_attribute("aria-required") == "true"
    thought.send_keys("The browser fills this form.")
    assert run_and_wait(d) == "success"
    assert "The browser fills this form." in d.find_element(By.CSS_SELECTOR, "#result .tree").text or \
        d.find_element(By.CSS_SELECTOR, "#result .envelope-text").text
    wait(d, lambda drv: "think" in drv.find_element(By.ID, "schema-text").text, "the schema")
    formats = [o.text for o in d.find_elements(By.CSS_SELECTOR, "#schema-format option")]
    assert formats == ["openai", "openai-strict", "openai-responses", "anthropic", "gemini", "mcp", "text"]
    shot(d, artifacts, "03-think")

    # write_file: a file appears in the root.
    open_tool(d, "write_file")
    field(d, "path").send_keys("from-the-browser.txt")
    field(d, "content").send_keys("written from the web page\n")
    assert run_and_wait(d) == "success"
    assert (server.root / "from-the-browser.txt").read_text() == "written from the web page\n"
    shot(d, artifacts, "04-write-file")

    # A list of nested objects with a choice: set_todo_list's form.
    open_tool(d, "set_todo_list")
    d.find_element(By.XPATH, "//form[@id='tool-form']//button[text()='Add item']").click()
    field(d, "title").send_keys("fill a nested form")
    status = field(d, "status")
    status.find_element(By.XPATH, ".//option[starts-with(normalize-space(.), 'In Progress')]").click()
    assert run_and_wait(d) == "success"
    assert "**fill a nested form** [In Progress]" in d.find_element(By.CSS_SELECTOR, "#result .envelope-text").text
    open_tool(d, "write_file")
    field(d, "path").send_keys("from-the-browser.txt")
    field(d, "content").send_keys("written from the web page\n")

    # The raw JSON mode carries what the form held.
    d.find_element(By.ID, "raw-mode").click()
    raw = json.loads(d.find_element(By.ID, "raw-args").get_attribute("value"))
    assert raw == {"path": "from-the-browser.txt", "content": "written from the web page\n"}

    # The call log: both calls, then one more arriving live.
    d.find_element(By.ID, "tab-calls").click()
    wait(d, lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#calls tr")) >= 3, "the calls")
    tools = [td.text for td in d.find_elements(By.CSS_SELECTOR, "#calls tr td:nth-child(2)")]
    assert tools[:3] == ["set_todo_list", "write_file", "think"], tools
    wait(d, ec.text_to_be_present_in_element((By.ID, "live"), "live"), "the live stream")
    server.call("think", {"thought": "arrives live"})
    wait(d, lambda drv: drv.find_elements(By.CSS_SELECTOR, "#calls tr td:nth-child(2)")[0].text == "think"
         and "arrives live" in drv.find_element(By.CSS_SELECTOR, "#calls tr").text, "the live call")
    relative = d.find_element(By.CSS_SELECTOR, "#calls tr time")
    assert relative.get_attribute("title"), "the absolute time on hover"
    # Filters: only write_file.
    d.find_element(By.ID, "f-tool").send_keys("write_file")
    d.find_element(By.CSS_SELECTOR, "#call-filters button[type='submit']").click()
    wait(d, lambda drv: [td.text for td in drv.find_elements(By.CSS_SELECTOR, "#calls tr td:nth-child(2)")]
         == ["write_file"], "the filtered log")
    shot(d, artifacts, "05-call-log")

    # Todos, as seed 000 renders them.
    server.call("set_todo_list", {"todos": [
        {"title": "read the page", "status": "Done"},
        {"title": "check the planner", "status": "In Progress"},
        {"title": "log out", "status": "Pending"},
    ]})
    d.find_element(By.ID, "tab-todos").click()
    wait(d, ec.presence_of_element_located((By.CSS_SELECTOR, "#todos li s")), "the todos")
    assert d.find_element(By.CSS_SELECTOR, "#todos li s").text == "read the page"
    assert d.find_element(By.CSS_SELECTOR, "#todos li strong").text == "check the planner"
    shot(d, artifacts, "06-todos")

    # The planner: a project made through the API, with its stats.
    project = server.call("create_project", {"name": "Browser garden", "description": "made over the API"})
    project_id = project["data"]["id"]
    server.call("create_task", {"title": "water", "project_id": project_id, "due_date": "2001-01-01"})
    done = server.call("create_task", {"title": "plant", "project_id": project_id})
    server.call("complete_task", {"task_id": done["data"]["id"]})
    server.call("create_goal", {"title": "Grow food", "stage": "yearly"})
    server.call("write_review", {"content": "A good day in the garden", "type": "daily", "mood": 7,
                                 "tags": ["garden"]})
    d.find_element(By.ID, "tab-planner").click()
    card = wait(d, ec.presence_of_element_located((By.CSS_SELECTOR, f"#projects [data-project='{project_id}']")),
                "the project")
    text = card.text
    assert "Browser garden" in text and "50% complete" in text and "1 overdue" in text, text
    assert "2 tasks" in text and "1 done" in text, text
    wait(d, ec.presence_of_element_located((By.CSS_SELECTOR, "#mood svg circle")), "the mood chart")
    assert "garden" in d.find_element(By.ID, "tags").text
    assert "Grow food" in d.find_element(By.ID, "goals").text
    assert "water" in d.find_element(By.ID, "tasks").text
    shot(d, artifacts, "07-planner")

    # The keyboard moves between tabs.
    d.find_element(By.ID, "tab-planner").send_keys(Keys.ARROW_LEFT)
    wait(d, lambda drv: drv.find_element(By.ID, "tab-todos").get_attribute("aria-selected") == "true", "ArrowLeft")
    assert d.switch_to.active_element.get_attribute("id") == "tab-todos"

    # Dark, and 200% zoom (a viewport half as wide in CSS pixels): nothing overflows.
    d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    d.find_element(By.ID, "tab-tools").click()
    open_tool(d, "think")
    shot(d, artifacts, "08-dark")
    background = d.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert background != "rgb(255, 255, 255)", background
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": 640, "height": 900, "deviceScaleFactor": 2, "mobile": False})
    for tab in ["tools", "calls", "todos", "planner", "runs", "cron", "checkpoints"]:
        d.find_element(By.ID, f"tab-{tab}").click()
        overflow = d.execute_script("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"{tab} at 200%: {overflow}px wider than the window"
    shot(d, artifacts, "09-zoom-200")
    d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    errors = console_errors(d)
    assert errors == [], errors
    unexpected = [e for e in wrong_login_log if e["level"] == "SEVERE" and "401" not in e["message"]]
    assert unexpected == [], unexpected

    # Logout: back to the login page; the API refuses the old session.
    d.find_element(By.ID, "logout").click()
    wait(d, ec.visibility_of_element_located((By.ID, "token")), "the login page after logout")
    assert d.get_cookies() == []

    print(f"\nnavigation timing, cold server: login page {login_timing} ms; "
          f"page after login {app_timing} ms (limit {MAX_LOAD_MS} ms to the load event)", file=sys.stderr)
    assert login_timing["load"] < MAX_LOAD_MS, login_timing
    assert app_timing["load"] < MAX_LOAD_MS, app_timing


def test_the_one_time_login_url_of_serve_open(toolbelt_bin: str, tmp_path: Path,
                                               browser: webdriver.Chrome, artifacts: Path) -> None:
    server = start_server(toolbelt_bin, tmp_path, "--open")
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        url = None
        while url is None and time.monotonic() < deadline:
            found = re.search(r"log in \(once, within 10 minutes\): (\S+)", server.log.read_text())
            url = found.group(1) if found else None
            time.sleep(0.02)
        assert url is not None, server.log.read_text()
        assert url.startswith(f"{server.base}/#once="), url
        browser.get(url)
        wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "#catalogue button[data-tool='think']")),
             "the page, logged in by the link")
        assert "#once=" not in browser.current_url, "the code is taken off the address"
        shot(browser, artifacts, "10-open-link")
        # Used up: a second browser profile gets the login page with a message.
        browser.delete_all_cookies()
        browser.get("about:blank")
        browser.get(url)
        error = wait(browser, ec.visibility_of_element_located((By.ID, "login-error")), "the refusal")
        assert "used already" in error.text
    finally:
        stop_server(server)


def write_transcript(state: Path, run_id: str, envelope: dict[str, Any]) -> None:
    """A transcript as `toolbelt agent` writes it: a prompt, a call of think and its
    result, a compaction, a notice, the answer."""
    runs = state / "agent" / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    t = "2026-05-01T09:00:00+02:00"
    lines = [
        {"time": t, "type": "run", "run_id": run_id, "provider": "openai", "model": "scripted-model"},
        {"time": t, "type": "message", "message": {"role": "user", "content": "Plan the garden week"}},
        {"time": t, "type": "message", "message": {"role": "assistant", "content": "Let me think first.",
            "tool_calls": [{"id": "c1", "name": "think", "arguments": json.dumps({"thought": "water on Monday"})}]}},
        {"time": t, "type": "envelope", "call_id": "c1", "envelope": envelope},
        {"time": t, "type": "message", "message": {"role": "tool", "results": [
            {"call_id": "c1", "name": "think", "content": envelope["text"]}]}},
        {"time": t, "type": "compaction", "kind": "tool_results", "tokens_before": 9000, "tokens_after": 3000},
        {"time": t, "type": "notice", "message": "the context is getting full"},
        {"time": t, "type": "message", "message": {"role": "assistant", "content": "Water on Monday, weed on Friday."}},
        {"time": t, "type": "end", "outcome": "final_answer", "message": "Water on Monday, weed on Friday.",
         "steps": 2, "tool_calls": 1, "usage": {"input_tokens": 1200, "output_tokens": 80,
                                                 "cached_tokens": 0, "cache_write_tokens": 0}},
    ]
    (runs / f"{run_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_agent_runs_and_cron_jobs(toolbelt_bin: str, tmp_path: Path,
                                  browser: webdriver.Chrome, artifacts: Path) -> None:
    config = tmp_path / "toolbelt.toml"
    config.write_text('[channels.local]\nkind = "file"\n')
    server = start_server(toolbelt_bin, tmp_path, "--config", str(config))
    try:
        d = browser
        envelope = server.call("think", {"thought": "water on Monday"})
        write_transcript(tmp_path / "state", "20260501-090000-ab12", envelope)
        server.call("cron", {"action": "add", "name": "daily-summary", "schedule": "7 18 * * 1-5",
                             "tz": "Europe/Berlin", "message": "Daily summary", "channel": "local"})
        server.call("cron", {"action": "run_now", "name": "daily-summary"})

        d.get(f"{server.base}/#runs")
        log_in(d, server)
        # The runs: time, first prompt, outcome, steps, tokens.
        d.find_element(By.ID, "tab-runs").click()
        row = wait(d, ec.presence_of_element_located((By.CSS_SELECTOR, "#runs tr")), "the runs")
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert "Plan the garden week" in cells[1], cells
        assert cells[2] == "final answer" and cells[3] == "2" and cells[4] == "1,280", cells
        assert row.find_element(By.TAG_NAME, "time").get_attribute("title"), "the absolute time on hover"
        shot(d, artifacts, "11-agent-runs")

        # One run, readable: the call by its summary, its result folded until opened.
        row.find_element(By.CSS_SELECTOR, "button[data-run]").send_keys(Keys.ENTER)
        call = wait(d, ec.presence_of_element_located((By.CSS_SELECTOR, "#run-detail details.call")), "the run")
        detail = d.find_element(By.ID, "run-detail")
        assert d.switch_to.active_element == detail, "the run gets the focus"
        text = detail.text
        for seen in ["Plan the garden week", "Let me think first.", 'Think: "water on Monday"',
                     "the context is getting full", "tool results: 9,000 → 3,000 tokens",
                     "Water on Monday, weed on Friday.", "2 steps, 1 tool calls"]:
            assert seen in text, (seen, text)
        result = call.find_elements(By.TAG_NAME, "pre")[-1]
        assert not result.is_displayed(), "the result is folded"
        call.find_element(By.TAG_NAME, "summary").click()
        assert result.is_displayed() and result.text == envelope["text"].strip(), result.text
        assert "water on Monday" in call.find_elements(By.TAG_NAME, "pre")[0].text
        shot(d, artifacts, "12-agent-run")

        # The cron jobs, by keyboard: next run in the job's zone, last run, channel.
        d.find_element(By.ID, "tab-runs").send_keys(Keys.ARROW_RIGHT)
        wait(d, lambda drv: drv.find_element(By.ID, "tab-cron").get_attribute("aria-selected") == "true",
             "ArrowRight to the cron jobs")
        row = wait(d, ec.presence_of_element_located((By.CSS_SELECTOR, "#cron tr")), "the jobs")
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert cells[0].startswith("daily-summary") and cells[1] == "Daily summary", cells
        assert cells[2] == "7 18 * * 1-5" and cells[3] == "Europe/Berlin" and cells[6] == "local", cells
        assert "sent" in cells[5], cells
        next_run = row.find_elements(By.TAG_NAME, "time")[0].get_attribute("title")
        assert re.search(r"18:07:00\+0[12]:00 \(Europe/Berlin\)$", next_run), next_run
        shot(d, artifacts, "13-cron-jobs")

        d.execute_cdp_cmd("Emulation.setEmulatedMedia",
                          {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        d.find_element(By.ID, "tab-runs").click()
        wait(d, ec.presence_of_element_located((By.CSS_SELECTOR, "#runs tr")), "the runs again")
        shot(d, artifacts, "14-agent-runs-dark")
        errors = console_errors(d)
        assert errors == [], errors
    finally:
        stop_server(server)


def test_a_prompt_jobs_question_answered_on_the_page(toolbelt_bin: str, tmp_path: Path,
                                                    browser: webdriver.Chrome, artifacts: Path) -> None:
    from test_providers import serve as scripted_model  # the scripted provider beside the binary

    ask = {"questions": [{"header": "Storage", "question": "Where should the sessions be stored?", "options": [
        {"label": "SQLite", "description": "one file beside the app"},
        {"label": "PostgreSQL", "description": "the existing database server"}]}]}
    script = {"kind": "openai", "replies": [
        {"tool_calls": [{"name": "ask_user", "arguments": json.dumps(ask)}]},
        {"text": "PostgreSQL it is."}]}
    with scripted_model(tmp_path, script) as model:
        config = tmp_path / "toolbelt.toml"
        config.write_text('[channels.local]\nkind = "file"\n[agent]\nprovider = "openai"\n'
                          f'model = "scripted-model"\nbase_url = "{model.base_url}"\n')
        server = start_server(toolbelt_bin, tmp_path, "--config", str(config), env_drop=(
            "TOOLBELT_AGENT_PROVIDER", "TOOLBELT_AGENT_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"))
        try:
            server.call("cron", {"action": "add", "name": "sessions", "schedule": "every 1h",
                                 "prompt": "Set up the sessions."})
            server.call("cron", {"action": "run_now", "name": "sessions"})
            d = browser
            d.get(f"{server.base}/")
            log_in(d, server)
            # The scheduler notices the job within 5 s; the page looks every 2 s.
            card = WebDriverWait(d, 30).until(ec.visibility_of_element_located(
                (By.CSS_SELECTOR, "#questions form.question-set")), message="waiting for the question")
            assert "Where should the sessions be stored?" in card.text, card.text
            assert "the existing database server" in card.text, card.text
            assert card.find_element(By.CSS_SELECTOR, "button[data-run]").text, "the run that asks"
            card.find_element(By.CSS_SELECTOR, "input[type='radio'][value='PostgreSQL']").click()
            shot(d, artifacts, "15-question")
            card.find_element(By.CSS_SELECTOR, "button[type='submit']").click()
            wait(d, lambda drv: not drv.find_elements(By.CSS_SELECTOR, "#questions form.question-set")
                 and not drv.find_element(By.ID, "questions").is_displayed(), "the answered question to go")

            deadline = time.monotonic() + WAIT_S
            while len(model.requests()) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            requests = model.requests()
            assert len(requests) == 2, requests
            sent = json.dumps(requests[1]["body"])
            assert "The user answered:" in sent and "- Storage: PostgreSQL" in sent, sent
            errors = console_errors(d)
            assert errors == [], errors
        finally:
            stop_server(server)


def test_a_hooks_ask_in_a_prompt_job_is_declined_on_the_page(toolbelt_bin: str, tmp_path: Path,
                                                           browser: webdriver.Chrome, artifacts: Path) -> None:
    """A person's hook asks before a scheduled run's call: the page shows the approval
    among its questions, and declining it there tells the model why."""
    from test_providers import serve as scripted_model  # the scripted provider beside the binary

    script = {"kind": "openai", "replies": [
        {"tool_calls": [{"name": "bash", "arguments": json.dumps({"command": "touch marker"})}]},
        {"text": "It was refused."}]}
    ask = '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"touching needs a yes"}}'
    with scripted_model(tmp_path, script) as model:
        config = tmp_path / "toolbelt.toml"
        config.write_text('[channels.local]\nkind = "file"\n[agent]\nprovider = "openai"\n'
                          f'model = "scripted-model"\nbase_url = "{model.base_url}"\n'
                          '[[hooks.pre_tool_use]]\nname = "ask-touch"\nif = "bash(touch:*)"\n'
                          f"command = {json.dumps('echo ' + repr(ask))}\n")
        server = start_server(toolbelt_bin, tmp_path, "--config", str(config), env_drop=(
            "TOOLBELT_AGENT_PROVIDER", "TOOLBELT_AGENT_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"))
        try:
            server.call("cron", {"action": "add", "name": "touchy", "schedule": "every 1h",
                                 "prompt": "Make the marker."})
            server.call("cron", {"action": "run_now", "name": "touchy"})
            d = browser
            d.get(f"{server.base}/")
            log_in(d, server)
            card = WebDriverWait(d, 30).until(ec.visibility_of_element_located(
                (By.CSS_SELECTOR, "#questions form.question-set")), message="waiting for the approval")
            assert "needs your approval under hook 'ask-touch' (touching needs a yes)" in card.text, card.text
            assert "touch marker" in card.text, card.text
            card.find_element(By.CSS_SELECTOR, "input[id$='-reason']").send_keys("not from a job")
            shot(d, artifacts, "16-approval")
            card.find_element(By.CSS_SELECTOR, "button.decline").click()
            wait(d, lambda drv: not drv.find_elements(By.CSS_SELECTOR, "#questions form.question-set"),
                 "the declined approval to go")
            deadline = time.monotonic() + WAIT_S
            while len(model.requests()) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            requests = model.requests()
            assert len(requests) == 2, requests
            sent = json.dumps(requests[1]["body"])
            assert "not from a job" in sent and "declined" in sent, sent
            assert not (server.root / "marker").exists()
            errors = console_errors(d)
            assert errors == [], errors
        finally:
            stop_server(server)


def test_checkpoints_a_diff_and_a_restore_shown_as_a_dry_run_first(server: Server, browser: webdriver.Chrome,
                                                                   artifacts: Path) -> None:
    d = browser
    notes = server.root / "notes.txt"
    server.call("write_file", {"path": "notes.txt", "content": "first\n"})
    server.call("write_file", {"path": "notes.txt", "content": "second\n"})
    d.get(f"{server.base}/")
    log_in(d, server)
    d.find_element(By.ID, "tab-checkpoints").click()
    wait(d, lambda drv: len(drv.find_elements(By.CSS_SELECTOR, "#checkpoints tr")) == 2, "the checkpoints")
    cells = [td.text for td in d.find_elements(By.CSS_SELECTOR, "#checkpoints tr")[0].find_elements(By.TAG_NAME, "td")]
    assert cells[0] == "cp-2" and cells[2] == "write_file" and cells[3] == "api" and cells[4] == "1", cells

    # The diff of cp-2.
    d.find_element(By.CSS_SELECTOR, "#checkpoints button[data-checkpoint='cp-2']").click()
    diff = wait(d, ec.visibility_of_element_located((By.CSS_SELECTOR, "#checkpoint-detail pre.diff")), "the diff")
    assert "-first" in diff.text and "+second" in diff.text, diff.text
    assert d.find_element(By.CSS_SELECTOR, "#checkpoint-detail pre.diff .del").text == "-first"
    shot(d, artifacts, "16-checkpoint-diff")

    # Restore: the dry run first, nothing changed until confirmed.
    d.find_element(By.ID, "restore-plan").click()
    confirm = wait(d, ec.element_to_be_clickable((By.ID, "restore-confirm")), "the dry run")
    assert "restore: notes.txt" in d.find_element(By.ID, "restore").text
    assert notes.read_text() == "second\n"
    shot(d, artifacts, "17-restore-dry-run")
    confirm.click()
    done = wait(d, ec.visibility_of_element_located((By.ID, "restore-done")), "the restore")
    assert "Restored 1 file" in done.text and "cp-3" in done.text, done.text
    assert notes.read_text() == "first\n"
    # The restore is a checkpoint of its own, made from the page.
    wait(d, lambda drv: drv.find_elements(By.CSS_SELECTOR, "#checkpoints tr td")[0].text == "cp-3", "the restore listed")
    cells = [td.text for td in d.find_elements(By.CSS_SELECTOR, "#checkpoints tr")[0].find_elements(By.TAG_NAME, "td")]
    assert cells[2] == "rewind (to before cp-2)" and cells[3] == "web", cells

    # A file changed by hand since: the conflict is named, and the rest can go on.
    other = server.root / "other.txt"
    server.call("write_file", {"path": "other.txt", "content": "third\n"})
    other.write_text("by hand\n")
    d.find_element(By.ID, "checkpoints-refresh").click()
    button = wait(d, ec.element_to_be_clickable((By.CSS_SELECTOR, "#checkpoints button[data-checkpoint='cp-4']")),
                  "cp-4")
    button.click()
    wait(d, ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#checkpoint-detail h3"), "cp-4"), "cp-4's diff")
    d.find_element(By.ID, "restore-plan").click()
    alert = wait(d, ec.visibility_of_element_located((By.CSS_SELECTOR, "#restore .error")), "the conflict")
    assert "other.txt" in alert.text, alert.text
    shot(d, artifacts, "18-restore-conflict")
    d.find_element(By.ID, "restore-skip-conflicts").click()
    wait(d, ec.text_to_be_present_in_element((By.ID, "restore"), "Nothing would be restored"), "the plan without it")
    assert "left alone: other.txt" in d.find_element(By.ID, "restore").text
    assert other.read_text() == "by hand\n"
    # The 409 of the dry run is what the browser logs as a failed resource.
    errors = [e for e in console_errors(d) if "409" not in e["message"]]
    assert errors == [], errors
