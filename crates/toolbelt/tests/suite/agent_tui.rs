//! `toolbelt agent`'s interactive screen in a real terminal: tmux runs the binary
//! against the scripted model provider on 127.0.0.1, keys are typed with
//! `send-keys` and the screen is read with `capture-pane`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use tempfile::TempDir;
use toolbelt_agent::ProviderKind;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};

/// The longest wait for something to appear on the screen.
const SCREEN_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the screen is read while waiting.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// The tmux command, installed when missing and possible; `None` when not.
pub(super) fn tmux() -> Option<PathBuf> {
    let works = || {
        Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !works() {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let apt = |args: &[&str]| {
            let mut cmd = if root {
                Command::new("apt-get")
            } else {
                let mut c = Command::new("sudo");
                c.args(["-n", "apt-get"]);
                c
            };
            cmd.args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !apt(&["install", "-y", "-q", "tmux"]) {
            let _ = apt(&["update", "-q"]) && apt(&["install", "-y", "-q", "tmux"]);
        }
    }
    works().then(|| PathBuf::from("tmux"))
}

/// A tmux server of its own (its socket in a temporary directory), killed at the
/// end of the test.
pub(super) struct Terminal {
    tmux: PathBuf,
    socket: PathBuf,
}

impl Terminal {
    /// Starts `command` (run by `sh -c`) in a detached 120x40 window.
    pub(super) fn start(tmux: PathBuf, dir: &Path, command: &str) -> Terminal {
        let socket = dir.join("tmux.sock");
        let term = Terminal { tmux, socket };
        let mut cmd = term.tmux();
        cmd.args(["-f", "/dev/null", "new-session", "-d", "-s", "agent"])
            .args(["-x", "120", "-y", "40"])
            .arg(command);
        for var in super::cli::TOOLBELT_ENV.iter().chain(&["NO_COLOR"]) {
            cmd.env_remove(var);
        }
        let out = cmd.env("TERM", "xterm-256color").output().unwrap();
        assert!(out.status.success(), "tmux: {}", text(&out.stderr));
        // A pane whose command died stays on screen with how it died.
        let _ = term
            .tmux()
            .args(["set-option", "-t", "agent", "remain-on-exit", "on"])
            .output();
        term
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new(&self.tmux);
        cmd.arg("-S").arg(&self.socket);
        cmd
    }

    /// Types `keys` (tmux key names: `Enter`, `C-c`, or literal text).
    pub(super) fn keys(&self, keys: &[&str]) {
        let out: Output = self
            .tmux()
            .args(["send-keys", "-t", "agent"])
            .args(keys)
            .output()
            .unwrap();
        assert!(out.status.success(), "send-keys: {}", text(&out.stderr));
    }

    /// Types `line` (literally) and Enter.
    pub(super) fn line(&self, line: &str) {
        self.keys(&["-l", line]);
        self.keys(&["Enter"]);
    }

    /// The screen and its scrollback (or why tmux could not show it).
    pub(super) fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-J", "-S", "-400", "-t", "agent"])
            .output()
            .unwrap();
        if out.status.success() {
            text(&out.stdout)
        } else {
            format!("(capture-pane failed: {})", text(&out.stderr))
        }
    }

    /// Waits until every one of `wanted` is on the screen; returns the screen.
    pub(super) fn wait_for(&self, wanted: &[&str]) -> String {
        let deadline = Instant::now() + SCREEN_TIMEOUT;
        loop {
            let screen = self.screen();
            if wanted.iter().all(|w| screen.contains(w)) {
                return screen;
            }
            if Instant::now() >= deadline {
                panic!("waited {SCREEN_TIMEOUT:?} for {wanted:?}; the screen:\n{screen}");
            }
            thread::sleep(POLL_INTERVAL);
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A workspace whose config makes `echo` commands wait for approval, and the
/// command line that runs the agent in it against `server`; the line prints
/// `EXITED <status>` when the binary ends.
fn workspace(server: &ScriptedServer) -> (TempDir, String) {
    workspace_with(server, "[permissions]\nask = [\"bash(echo:*)\"]\n", None)
}

/// [`workspace`] with `config` as the workspace's toolbelt.toml and, when given,
/// `user` as the user's own (in a configuration directory of the test's).
fn workspace_with(server: &ScriptedServer, config: &str, user: Option<&str>) -> (TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("toolbelt.toml"), config).unwrap();
    let config_home = dir.path().join("config");
    std::fs::create_dir_all(config_home.join("toolbelt")).unwrap();
    if let Some(user) = user {
        std::fs::write(config_home.join("toolbelt").join("toolbelt.toml"), user).unwrap();
    }
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let command = format!(
        "trap 'echo WRAPPER-INTERRUPTED' INT; \
         cd {root} && XDG_STATE_HOME={state} XDG_CONFIG_HOME={config} {bin} --root {root} agent --model scripted-model --base-url {url}; \
         echo EXITED $?; sleep 600",
        root = quote(&root.display().to_string()),
        config = quote(&config_home.display().to_string()),
        bin = quote(env!("CARGO_BIN_EXE_toolbelt")),
        state = quote(&super::cli::state_home().display().to_string()),
        url = quote(&server.base_url()),
    );
    (dir, command)
}

/// The text of every message of a recorded request, for searching.
fn messages(body: &serde_json::Value) -> String {
    body.get("messages")
        .map(serde_json::Value::to_string)
        .unwrap_or_default()
}

#[test]
fn approved_call_runs_and_the_answer_streams() {
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed and cannot be installed here");
        return;
    };
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("bash", r#"{"command":"echo hi"}"#),
            Reply::text("done: hi"),
        ],
    ))
    .unwrap();
    let (dir, command) = workspace(&server);
    let term = Terminal::start(tmux, dir.path(), &command);
    term.wait_for(&["/help for commands", "› "]);

    term.keys(&["-l", "say hi through the shell"]);
    term.keys(&["Enter"]);
    let screen = term.wait_for(&[
        "bash needs your approval (rule bash(echo:*))",
        "$ echo hi",
        "Allow? [y]es / [n]o / [a]lways for this session",
    ]);
    assert!(!screen.contains("done: hi"), "{screen}");

    term.keys(&["y"]);
    let screen = term.wait_for(&["● bash echo hi", "done: hi", "1 tool call"]);
    assert!(screen.contains("for this session yes"), "{screen}");

    term.keys(&["-l", "/exit"]);
    term.keys(&["Enter"]);
    term.wait_for(&["EXITED 0"]);

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let second = messages(&requests[1].body);
    assert!(second.contains("say hi through the shell"), "{second}");
    let result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result in {second}"));
    let output = result["content"].as_str().unwrap_or_default();
    assert!(output.contains("hi"), "{output}");
    assert!(!output.contains("ERROR"), "{output}");
    let runs =
        std::fs::read_dir(super::cli::state_dir(&dir.path().join("work")).join("agent/runs"))
            .unwrap()
            .count();
    assert_eq!(runs, 1);
}

#[test]
fn a_hooks_ask_reaches_the_terminal_prompt() {
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed and cannot be installed here");
        return;
    };
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("bash", r#"{"command":"touch asked"}"#),
            Reply::text("not done"),
        ],
    ))
    .unwrap();
    // No rule asks: the user's own hook does.
    let hook = r#"
[[hooks.pre_tool_use]]
name = "ask-touch"
if = "bash(touch:*)"
command = """echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"touching needs a yes"}}'"""
"#;
    let (dir, command) = workspace_with(&server, "", Some(hook));
    let term = Terminal::start(tmux, dir.path(), &command);
    term.wait_for(&["/help for commands", "› "]);
    term.keys(&["-l", "make the file"]);
    term.keys(&["Enter"]);
    term.wait_for(&[
        "bash needs your approval (rule hook 'ask-touch' (touching needs a yes))",
        "$ touch asked",
    ]);
    term.keys(&["n"]);
    term.wait_for(&["Why not?"]);
    term.keys(&["-l", "not now"]);
    term.keys(&["Enter"]);
    term.wait_for(&["not done"]);
    term.keys(&["-l", "/exit"]);
    term.keys(&["Enter"]);
    term.wait_for(&["EXITED 0"]);
    assert!(!dir.path().join("work").join("asked").exists());
    let requests = server.requests();
    let second = messages(&requests[1].body);
    assert!(
        second.contains("declined") && second.contains("not now"),
        "{second}"
    );
}

#[test]
fn a_no_carries_its_reason_and_ctrl_c_keeps_the_conversation() {
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed and cannot be installed here");
        return;
    };
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::call("bash", r#"{"command":"echo hi"}"#),
            Reply::text("fine, not that way"),
            Reply::call("bash", r#"{"command":"sleep 120"}"#),
            Reply::text("still here"),
        ],
    ))
    .unwrap();
    let (dir, command) = workspace(&server);
    let term = Terminal::start(tmux, dir.path(), &command);
    term.wait_for(&["/help for commands"]);

    // A no, with a reason for the model.
    term.keys(&["-l", "first task"]);
    term.keys(&["Enter"]);
    term.wait_for(&["Allow? [y]es / [n]o / [a]lways for this session"]);
    term.keys(&["n"]);
    term.wait_for(&["Why not?"]);
    term.keys(&["-l", "use printf instead"]);
    term.keys(&["Enter"]);
    term.wait_for(&["fine, not that way"]);
    let second = messages(&server.requests()[1].body);
    assert!(second.contains("use printf instead"), "{second}");

    // Ctrl-C stops a running command and returns to the prompt.
    term.keys(&["-l", "second task"]);
    term.keys(&["Enter"]);
    term.wait_for(&["bash sleep 120"]);
    term.keys(&["C-c"]);
    term.wait_for(&["interrupted", "CANCELLED", "⏹ cancelled"]);

    // The conversation goes on.
    term.keys(&["-l", "third task"]);
    term.keys(&["Enter"]);
    term.wait_for(&["still here"]);
    let fourth = messages(&server.requests()[3].body);
    for earlier in ["first task", "second task", "third task"] {
        assert!(fourth.contains(earlier), "{earlier} missing in {fourth}");
    }

    // Ctrl-C on an empty line leaves.
    term.keys(&["C-c"]);
    term.wait_for(&["EXITED 0"]);
}

/// A server that takes long to start its answer (a CPU reading the prompt): the
/// spinner says the screen waits for it, and for how long.
#[test]
fn the_wait_for_a_slow_server_is_shown() {
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed and cannot be installed here");
        return;
    };
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::text("read it all").delayed(7_000)],
    ))
    .unwrap();
    let (dir, command) = workspace(&server);
    let term = Terminal::start(tmux, dir.path(), &command);
    term.wait_for(&["/help for commands"]);
    term.keys(&["-l", "a long prompt"]);
    term.keys(&["Enter"]);
    term.wait_for(&["waiting for the model: 5 s (it reads a prompt of about"]);
    term.wait_for(&["read it all"]);
    term.keys(&["-l", "/exit"]);
    term.keys(&["Enter"]);
    term.wait_for(&["EXITED 0"]);
}

#[test]
fn a_running_subagent_is_one_line_that_updates() {
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed and cannot be installed here");
        return;
    };
    let server = ScriptedServer::start(
        Script::new(
            ProviderKind::OpenAi,
            vec![
                Reply::call(
                    "task",
                    r#"{"description":"inspect the tree","prompt":"TUI-CHILD look around"}"#,
                ),
                Reply::text("parent done"),
            ],
        )
        .route(
            "TUI-CHILD",
            vec![
                Reply::call("bash", r#"{"command":"sleep 4"}"#),
                Reply::text("child finished"),
            ],
        ),
    )
    .unwrap();
    let (dir, command) = workspace(&server);
    let term = Terminal::start(tmux, dir.path(), &command);
    term.wait_for(&["/help for commands"]);
    term.keys(&["-l", "look with a subagent"]);
    term.keys(&["Enter"]);
    // While the child works, its progress is the one updating line.
    term.wait_for(&["task \"inspect the tree\" — 1 tool call · bash sleep 4"]);
    // Then the call's line, folded to its count, and the parent's answer.
    let screen = term.wait_for(&["● task \"inspect the tree\" — 1 tool call", "parent done"]);
    assert_eq!(
        screen
            .matches("task \"inspect the tree\" — 1 tool call · bash")
            .count(),
        0,
        "the progress line was left on the screen:\n{screen}"
    );
    term.keys(&["-l", "/exit"]);
    term.keys(&["Enter"]);
    term.wait_for(&["EXITED 0"]);
}

/// The model's call of `ask_user`: a single-choice question, then a multi-select
/// one.
fn two_questions() -> Reply {
    Reply::call(
        "ask_user",
        r#"{"questions": [
            {"header": "Database", "question": "Which database should the service use?",
             "options": [
                {"label": "PostgreSQL", "description": "A server the team already runs."},
                {"label": "SQLite", "description": "One file, nothing to run."}]},
            {"header": "Features", "question": "Which features should ship first?",
             "multi_select": true,
             "options": [
                {"label": "Search", "description": "Full-text search of the notes."},
                {"label": "Export", "description": "The notes as Markdown files."},
                {"label": "Sync", "description": "Between devices."}]}
        ]}"#,
    )
}

/// Starts the agent against a model that asks [`two_questions`] and then answers
/// `final_text`, types a prompt, and waits for the first question.
fn asked(tmux: PathBuf, final_text: &str) -> (ScriptedServer, TempDir, Terminal) {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![two_questions(), Reply::text(final_text)],
    ))
    .unwrap();
    let (dir, command) = workspace(&server);
    let term = Terminal::start(tmux, dir.path(), &command);
    term.wait_for(&["/help for commands", "› "]);
    term.keys(&["-l", "plan the notes service"]);
    term.keys(&["Enter"]);
    term.wait_for(&[
        "? The model has 2 questions for you:",
        "Database · 1 of 2",
        "Which database should the service use?",
        "› 1. PostgreSQL",
        "A server the team already runs.",
        "  3. Type your own answer",
    ]);
    (server, dir, term)
}

/// What the model was sent as the result of its first call (in the second
/// request).
fn first_tool_output(server: &ScriptedServer) -> String {
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let body = &requests[1].body;
    let result = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result in {}", messages(body)));
    result["content"].as_str().unwrap_or_default().to_string()
}

/// `/exit`, and the binary's end.
fn leave(term: &Terminal) {
    term.keys(&["-l", "/exit"]);
    term.keys(&["Enter"]);
    term.wait_for(&["EXITED 0"]);
}

#[test]
fn questions_are_answered_with_arrows_and_space() {
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed and cannot be installed here");
        return;
    };
    let (server, _dir, term) = asked(tmux, "SQLite it is");

    term.keys(&["Down"]);
    term.wait_for(&["› 2. SQLite"]);
    term.keys(&["Enter"]);
    term.wait_for(&[
        "Features · 2 of 2 · choose any",
        "Which features should ship first?",
        "› 1. [ ] Search",
        "  4. Type your own answer",
    ]);
    term.keys(&["Space"]);
    term.keys(&["Down"]);
    term.keys(&["Space"]);
    term.wait_for(&["  1. [x] Search", "› 2. [x] Export", "  3. [ ] Sync"]);
    term.keys(&["Enter"]);
    let screen = term.wait_for(&["SQLite it is", "1 tool call"]);
    // The pickers are gone; the questions and their answers stay.
    assert!(screen.contains("Database · Which database should the service use?\n  → SQLite"));
    assert!(screen.contains("Features · Which features should ship first?\n  → Search, Export"));
    assert!(!screen.contains("Type your own answer"), "{screen}");

    let output = first_tool_output(&server);
    assert!(output.contains("The user answered:"), "{output}");
    assert!(output.contains("- Database: SQLite"), "{output}");
    assert!(output.contains("- Features: Search, Export"), "{output}");
    leave(&term);
}

#[test]
fn a_question_may_be_answered_in_own_words() {
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed and cannot be installed here");
        return;
    };
    let (server, _dir, term) = asked(tmux, "MariaDB then");

    // The number of the last entry starts the answer; Enter finishes it.
    term.keys(&["3"]);
    term.wait_for(&["› 3. Your answer:", "Enter done · Esc back to the options"]);
    term.keys(&["-l", "MariaDB, if the host has it"]);
    term.wait_for(&["› 3. Your answer: MariaDB, if the host has it"]);
    term.keys(&["Enter"]);
    // In the multi-select question, a ticked option and words of one's own.
    term.wait_for(&["Which features should ship first?"]);
    term.keys(&["2"]);
    term.keys(&["4"]);
    term.wait_for(&["  2. [x] Export", "› 4. Your answer:"]);
    term.keys(&["-l", "sharing later"]);
    term.keys(&["Enter"]);
    let screen = term.wait_for(&["MariaDB then"]);
    assert!(
        screen.contains("  → \"MariaDB, if the host has it\""),
        "{screen}"
    );
    assert!(screen.contains("  → Export, \"sharing later\""), "{screen}");

    let output = first_tool_output(&server);
    assert!(output.contains("The user answered:"), "{output}");
    assert!(
        output.contains("- Database: \"MariaDB, if the host has it\" (in their own words)"),
        "{output}"
    );
    assert!(
        output.contains("- Features: Export, \"sharing later\" (in their own words)"),
        "{output}"
    );
    leave(&term);
}

#[test]
fn esc_declines_the_questions() {
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed and cannot be installed here");
        return;
    };
    let (server, _dir, term) = asked(tmux, "I will decide myself");

    term.keys(&["Escape"]);
    let screen = term.wait_for(&["  → declined", "I will decide myself"]);
    // The second question was not put.
    assert!(!screen.contains("Which features"), "{screen}");

    let output = first_tool_output(&server);
    assert!(output.contains("The user declined to answer"), "{output}");
    assert!(!output.contains("The user answered"), "{output}");
    leave(&term);
}
