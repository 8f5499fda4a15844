//! `/rewind` on `toolbelt agent`'s interactive screen, in a real terminal: tmux
//! runs the binary against the scripted model provider, keys are typed with
//! `send-keys` and the screen is read with `capture-pane` (as in `agent_tui`).

use std::path::{Path, PathBuf};

use serde_json::json;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
use toolbelt_agent::{ProviderKind, transcript};

use super::agent_tui::{Terminal, tmux};

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
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed");
        return;
    };
    let term = Terminal::start(tmux, dir.path(), &agent_command(&root, &server, ""));
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
    let Some(tmux) = tmux() else {
        eprintln!("skipping: tmux is not installed");
        return;
    };
    let term = Terminal::start(tmux, dir.path(), &command);
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
