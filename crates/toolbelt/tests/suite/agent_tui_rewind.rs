//! `/rewind` on `toolbelt agent`'s interactive screen, in a real terminal: tmux
//! runs the binary against the scripted model provider, keys are typed with
//! `send-keys` and the screen is read with `capture-pane` (as in `agent_tui`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
use toolbelt_agent::{ProviderKind, transcript};

/// The longest wait for something to appear on the screen.
const SCREEN_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the screen is read while waiting.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// A tmux server of its own (its socket in a temporary directory), killed at the
/// end of the test.
struct Terminal {
    socket: PathBuf,
}

impl Terminal {
    /// Starts `command` (run by `sh -c`) in a detached 120x40 window; `None`
    /// when there is no tmux.
    fn start(dir: &Path, command: &str) -> Option<Terminal> {
        let works = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !works {
            return None;
        }
        let term = Terminal {
            socket: dir.join("tmux.sock"),
        };
        let mut cmd = term.tmux();
        cmd.args(["-f", "/dev/null", "new-session", "-d", "-s", "agent"])
            .args(["-x", "120", "-y", "40"])
            .arg(command);
        for var in super::cli::TOOLBELT_ENV.iter().chain(&["NO_COLOR"]) {
            cmd.env_remove(var);
        }
        let out = cmd.env("TERM", "xterm-256color").output().unwrap();
        assert!(out.status.success(), "tmux: {}", text(&out.stderr));
        let _ = term
            .tmux()
            .args(["set-option", "-t", "agent", "remain-on-exit", "on"])
            .output();
        Some(term)
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.socket);
        cmd
    }

    /// Types `keys` (tmux key names, or literal text after `-l`).
    fn keys(&self, keys: &[&str]) {
        let out = self
            .tmux()
            .args(["send-keys", "-t", "agent"])
            .args(keys)
            .output()
            .unwrap();
        assert!(out.status.success(), "send-keys: {}", text(&out.stderr));
    }

    /// Types `line` and Enter.
    fn line(&self, line: &str) {
        self.keys(&["-l", line]);
        self.keys(&["Enter"]);
    }

    /// The screen and its scrollback.
    fn screen(&self) -> String {
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
    fn wait_for(&self, wanted: &[&str]) -> String {
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

fn write(path: &str, content: &str) -> Reply {
    Reply::call(
        "write_file",
        json!({"path": path, "content": content}).to_string(),
    )
}

/// The command line that runs the agent in `root` against `server` (with
/// `extra` in its environment); it prints `EXITED <status>` when the binary ends.
fn agent_command(root: &Path, server: &ScriptedServer, extra: &str) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    format!(
        "cd {root} && {extra} XDG_STATE_HOME={state} {bin} --root {root} agent \
         --model scripted-model --base-url {url}; echo EXITED $?; sleep 600",
        root = quote(&root.display().to_string()),
        bin = quote(env!("CARGO_BIN_EXE_toolbelt")),
        state = quote(&super::cli::state_home().display().to_string()),
        url = quote(&server.base_url()),
    )
}

/// The runs' transcripts, oldest first.
fn runs(root: &Path) -> Vec<PathBuf> {
    transcript::list(&super::cli::state_dir(root).join("agent").join("runs"))
        .unwrap()
        .into_iter()
        .map(|r| r.path)
        .collect()
}

fn id_of(path: &Path) -> String {
    path.file_stem().unwrap().to_str().unwrap().to_string()
}

#[test]
fn rewind_picks_a_turn_previews_and_goes_on_in_the_new_run() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            write("first.txt", "one\n"),
            Reply::text("wrote the first file"),
            write("second.txt", "two\nlines\n"),
            Reply::text("wrote the second file"),
            Reply::text("answer in the new run"),
        ],
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir(&root).unwrap();
    let Some(term) = Terminal::start(dir.path(), &agent_command(&root, &server, "")) else {
        eprintln!("skipping: tmux is not installed");
        return;
    };
    term.wait_for(&["/help for commands", "› "]);

    term.line("/help");
    term.wait_for(&["/rewind   back to before a turn"]);

    term.line("write the first file");
    term.wait_for(&["wrote the first file"]);
    term.line("write the second file");
    term.wait_for(&["wrote the second file"]);
    assert_eq!(
        std::fs::read_to_string(root.join("second.txt")).unwrap(),
        "two\nlines\n"
    );
    let before = runs(&root);
    assert_eq!(before.len(), 1);
    let old = id_of(&before[0]);

    // The turns, each with its prompt and the files it changed.
    term.line("/rewind");
    term.wait_for(&[
        &format!("Back to before which turn of run {old}?"),
        "  1. \"write the first file\"  1 file: first.txt",
        "› 2. \"write the second file\"  1 file: second.txt",
        "↑↓ move · 1-2 pick · Enter confirm · Esc cancel",
    ]);
    term.keys(&["2"]);
    // The plan and the change it takes back, then code, conversation or both.
    let screen = term.wait_for(&[
        "  → \"write the second file\"  1 file: second.txt",
        "Rewinding the files to before turn 2 (cp-",
        "  remove   second.txt",
        "What it takes back:",
        "+lines",
        "What goes back to before turn 2?",
        "› 1. Both: the files, and the conversation in a new run",
    ]);
    assert!(!screen.contains("first.txt (created"), "{screen}");
    term.keys(&["1"]);
    term.wait_for(&["Rewind the files and the conversation to before turn 2? [y]es / [n]o"]);
    // Nothing is done before the yes.
    assert!(root.join("second.txt").exists());
    term.keys(&["y"]);
    let screen = term.wait_for(&["✓ Now in run "]);

    assert!(!root.join("second.txt").exists(), "{screen}");
    assert_eq!(
        std::fs::read_to_string(root.join("first.txt")).unwrap(),
        "one\n"
    );
    let after = runs(&root);
    assert_eq!(after.len(), 2, "{after:?}");
    let new = after
        .iter()
        .map(|p| id_of(p))
        .find(|id| *id != old)
        .unwrap();
    assert!(
        screen.contains(&format!(
            "✓ Now in run {new}: the conversation as it was before turn 2."
        )),
        "{screen}"
    );
    assert!(screen.contains(&format!("new run {new}")), "{screen}");
    assert!(screen.contains("  remove   second.txt"), "{screen}");

    // The screen goes on in the new run, whose conversation has turn 1 only.
    term.line("what is there now");
    term.wait_for(&["answer in the new run"]);
    let requests = server.requests();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("write the first file"), "{last}");
    assert!(!last.contains("write the second file"), "{last}");
    let new_path = after.iter().find(|p| id_of(p) == new).unwrap();
    let new_transcript = std::fs::read_to_string(new_path).unwrap();
    assert!(
        new_transcript.contains("what is there now"),
        "{new_transcript}"
    );
    assert!(
        !std::fs::read_to_string(&before[0])
            .unwrap()
            .contains("what is there now")
    );

    // In the new run, turn 1 is still the old run's, with its file.
    term.line("/rewind");
    term.wait_for(&[
        &format!("Back to before which turn of run {new}?"),
        "  1. \"write the first file\"  1 file: first.txt",
        "› 2. \"what is there now\"  no file changed",
    ]);
    term.keys(&["Escape"]);
    term.wait_for(&["  → cancelled"]);
    term.line("/exit");
    term.wait_for(&["EXITED 0"]);
}

#[test]
fn rewind_says_when_there_is_nothing_and_when_checkpoints_are_off() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![write("kept.txt", "kept\n"), Reply::text("wrote it")],
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir(&root).unwrap();
    let command = agent_command(&root, &server, "TOOLBELT_CHECKPOINTS=off");
    let Some(term) = Terminal::start(dir.path(), &command) else {
        eprintln!("skipping: tmux is not installed");
        return;
    };
    term.wait_for(&["/help for commands", "› "]);
    term.line("/rewind");
    term.wait_for(&["There is nothing to rewind: this conversation has no turns yet."]);

    term.line("write a file");
    term.wait_for(&["wrote it"]);
    term.line("/rewind");
    term.wait_for(&[
        "Checkpoints are off in this workspace ([checkpoints] enabled = false): \
         the files cannot be rewound, only the conversation.",
        "› 1. \"write a file\"",
    ]);
    term.keys(&["Escape"]);
    term.wait_for(&["  → cancelled"]);
    term.line("/exit");
    term.wait_for(&["EXITED 0"]);
    assert!(root.join("kept.txt").exists());
    assert_eq!(runs(&root).len(), 1);
}
