//! The checkpoints of `toolbelt agent`'s calls name the run and its turn (a
//! subagent's, its parent; a prompt job's, the job), and `--rewind-to TURN` goes
//! back to before a turn: the conversation in a new run, the files through the
//! checkpoints.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
use toolbelt_agent::{Message, ProviderKind, transcript};
use toolbelt_core::Origin;
use toolbelt_store::{Location, Store};

use super::cli::{Run, command, finish, state_dir};

const KIND: ProviderKind = ProviderKind::OpenAi;

/// Runs `toolbelt agent <args>` on `server` to its end.
pub(super) fn agent(root: &Path, server: &ScriptedServer, args: &[&str]) -> Run {
    let mut all = vec![
        "agent",
        "--provider",
        KIND.as_str(),
        "--model",
        "scripted-model",
    ];
    all.extend_from_slice(args);
    let mut cmd = command(root, &all);
    cmd.arg("--base-url").arg(server.base_url());
    cmd.env(KIND.default_key_env(), "sk-test");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let run = finish(child, args);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    run
}

#[track_caller]
fn ok(run: &Run) {
    assert_eq!(
        run.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
}

fn write(path: &str, content: &str) -> Reply {
    Reply::call(
        "write_file",
        json!({"path": path, "content": content}).to_string(),
    )
}

fn read_file(path: &str) -> Reply {
    Reply::call("read_file", json!({"path": path}).to_string())
}

fn edit(path: &str, old: &str, new: &str) -> Reply {
    Reply::call(
        "edit_file",
        json!({"path": path, "old_string": old, "new_string": new}).to_string(),
    )
}

fn runs_dir(root: &Path) -> PathBuf {
    state_dir(root).join("agent").join("runs")
}

/// The top-level runs' transcripts, oldest first.
fn runs(root: &Path) -> Vec<PathBuf> {
    transcript::list(&runs_dir(root))
        .unwrap()
        .into_iter()
        .map(|r| r.path)
        .collect()
}

fn id_of(path: &Path) -> String {
    path.file_stem().unwrap().to_str().unwrap().to_string()
}

fn read(root: &Path, name: &str) -> Option<String> {
    fs::read_to_string(root.join(name)).ok()
}

/// The checkpoints the calls of a transcript took (`context.checkpoint` of their
/// envelopes), with the origin each recorded.
fn checkpoints_of(root: &Path, transcript: &Path) -> Vec<(String, Origin)> {
    let ids: Vec<i64> = fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "envelope")
        .filter_map(|l| {
            l["envelope"]["context"]["checkpoint"]
                .as_str()
                .map(|c| c.trim_start_matches("cp-").parse().unwrap())
        })
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let location = Location::Sqlite(state_dir(root).join("toolbelt.db"));
    rt.block_on(async {
        let store = Store::open(&location).await.unwrap();
        let mut out = Vec::new();
        for id in ids {
            let record = toolbelt_store::get_checkpoint(&store, id)
                .await
                .unwrap()
                .unwrap();
            out.push((
                format!("cp-{id}"),
                serde_json::from_str(&record.origin).unwrap(),
            ));
        }
        store.close().await;
        out
    })
}

#[test]
fn the_checkpoints_of_a_run_name_it_and_its_turn_and_a_subagent_its_parent() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(
        Script::new(
            KIND,
            vec![
                write("a.txt", "from the agent"),
                Reply::call(
                    "task",
                    json!({"description": "write", "prompt": "CHILD-W: write d.txt"}).to_string(),
                ),
                Reply::text("both written"),
            ],
        )
        .route(
            "CHILD-W",
            vec![write("d.txt", "from the child"), Reply::text("wrote d.txt")],
        ),
    )
    .unwrap();
    let run = agent(
        root.path(),
        &server,
        &["-p", "write a.txt, then have a child write d.txt"],
    );
    ok(&run);
    assert_eq!(
        read(root.path(), "d.txt").as_deref(),
        Some("from the child")
    );
    let files = runs(root.path());
    assert_eq!(files.len(), 1);
    let id = id_of(&files[0]);
    let own = checkpoints_of(root.path(), &files[0]);
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(own[0].1, Origin::new("agent").in_turn(&id, 1));
    let children: Vec<PathBuf> = fs::read_dir(runs_dir(root.path()).join("subagents"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(children.len(), 1);
    let child = checkpoints_of(root.path(), &children[0]);
    assert_eq!(child.len(), 1, "{child:?}");
    assert_eq!(
        child[0].1,
        Origin {
            parent_run_id: Some(id.clone()),
            ..Origin::new("subagent").in_turn(id_of(&children[0]), 1)
        }
    );
}

/// Three turns, each changing files: turn 1 writes a.txt, turn 2 edits notes.txt
/// and writes b.txt, turn 3 rewrites a.txt. Returns the run's id.
fn three_turns(root: &Path, server: &ScriptedServer) -> String {
    fs::write(root.join("notes.txt"), "v0\n").unwrap();
    ok(&agent(root, server, &["-p", "turn one"]));
    ok(&agent(root, server, &["--continue", "-p", "turn two"]));
    ok(&agent(root, server, &["--continue", "-p", "turn three"]));
    assert_eq!(read(root, "a.txt").as_deref(), Some("A3"));
    assert_eq!(read(root, "b.txt").as_deref(), Some("B2"));
    assert_eq!(read(root, "notes.txt").as_deref(), Some("v2\n"));
    let files = runs(root);
    assert_eq!(files.len(), 1);
    id_of(&files[0])
}

fn three_turn_replies() -> Vec<Reply> {
    vec![
        write("a.txt", "A1"),
        Reply::text("done one"),
        read_file("notes.txt"),
        edit("notes.txt", "v0", "v2"),
        write("b.txt", "B2"),
        Reply::text("done two"),
        read_file("a.txt"),
        write("a.txt", "A3"),
        Reply::text("done three"),
    ]
}

fn user_texts(path: &Path) -> Vec<String> {
    transcript::load(path)
        .unwrap()
        .messages
        .into_iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content),
            _ => None,
        })
        .collect()
}

#[test]
fn conversation_forks_the_run_and_code_puts_back_only_the_files() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(KIND, three_turn_replies())).unwrap();
    let id = three_turns(root.path(), &server);
    let original_path = runs(root.path())[0].clone();
    let original = fs::read(&original_path).unwrap();

    // The conversation only: a new run, the files as they are.
    let run = agent(
        root.path(),
        &server,
        &["--resume", &id, "--rewind-to", "2", "--conversation"],
    );
    ok(&run);
    assert_eq!(fs::read(&original_path).unwrap(), original);
    let files = runs(root.path());
    assert_eq!(files.len(), 2, "{files:?}");
    let fork = files.iter().find(|p| **p != original_path).unwrap();
    assert!(run.stdout.contains(&id_of(fork)), "{}", run.stdout);
    assert_eq!(user_texts(fork), vec!["turn one".to_string()]);
    assert_eq!(read(root.path(), "a.txt").as_deref(), Some("A3"));
    assert_eq!(read(root.path(), "b.txt").as_deref(), Some("B2"));
    assert_eq!(read(root.path(), "notes.txt").as_deref(), Some("v2\n"));

    // The files only: no new run.
    let run = agent(
        root.path(),
        &server,
        &["--resume", &id, "--rewind-to", "2", "--code"],
    );
    ok(&run);
    assert!(run.stdout.contains("before turn 2"), "{}", run.stdout);
    assert!(run.stdout.contains("b.txt"), "{}", run.stdout);
    assert_eq!(read(root.path(), "a.txt").as_deref(), Some("A1"));
    assert_eq!(read(root.path(), "b.txt"), None);
    assert_eq!(read(root.path(), "notes.txt").as_deref(), Some("v0\n"));
    assert_eq!(runs(root.path()).len(), 2);
    assert_eq!(fs::read(&original_path).unwrap(), original);

    // A turn the run does not have, and --code with a prompt.
    let run = agent(root.path(), &server, &["--resume", &id, "--rewind-to", "4"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no turn 4"), "{}", run.stderr);
    let run = agent(
        root.path(),
        &server,
        &["--resume", &id, "--rewind-to", "2", "--code", "-p", "x"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(server.remaining(), 0);
}

#[test]
fn both_forks_the_run_before_the_turn_with_the_files_as_they_were() {
    let root = TempDir::new().unwrap();
    let mut replies = three_turn_replies();
    // The fork's own turn 2, then a rewind of the fork to its turn 1.
    replies.extend([write("c.txt", "C2"), Reply::text("done two, again")]);
    let server = ScriptedServer::start(Script::new(KIND, replies)).unwrap();
    let id = three_turns(root.path(), &server);
    let original_path = runs(root.path())[0].clone();
    let original = fs::read(&original_path).unwrap();

    let run = agent(root.path(), &server, &["--resume", &id, "--rewind-to", "2"]);
    ok(&run);
    assert_eq!(fs::read(&original_path).unwrap(), original);
    assert_eq!(read(root.path(), "a.txt").as_deref(), Some("A1"));
    assert_eq!(read(root.path(), "b.txt"), None);
    assert_eq!(read(root.path(), "notes.txt").as_deref(), Some("v0\n"));
    let files = runs(root.path());
    assert_eq!(files.len(), 2);
    let fork = files.iter().find(|p| **p != original_path).unwrap().clone();
    let fork_id = id_of(&fork);
    assert_eq!(user_texts(&fork), vec!["turn one".to_string()]);
    let turns = transcript::turns(&fork).unwrap();
    assert_eq!(turns.count, 1);
    assert_eq!(turns.forked_from.unwrap().run_id, id);

    // The new run goes on from turn 1: the model sees only it, and the new turn is
    // the run's turn 2.
    let run = agent(
        root.path(),
        &server,
        &["--resume", &fork_id, "-p", "turn two, differently"],
    );
    ok(&run);
    let sent = server.requests();
    let messages = sent[sent.len() - 2].body["messages"].to_string();
    assert!(messages.contains("turn one"), "{messages}");
    assert!(!messages.contains("turn two\""), "{messages}");
    assert!(!messages.contains("done two"), "{messages}");
    assert_eq!(
        checkpoints_of(root.path(), &fork).pop().unwrap().1,
        Origin::new("agent").in_turn(&fork_id, 2)
    );
    assert_eq!(read(root.path(), "c.txt").as_deref(), Some("C2"));

    // Back to before the fork's turn 1: that turn was the first run's, so its
    // checkpoints count.
    let run = agent(
        root.path(),
        &server,
        &["--resume", &fork_id, "--rewind-to", "1", "--code"],
    );
    ok(&run);
    assert_eq!(read(root.path(), "a.txt"), None);
    assert_eq!(read(root.path(), "c.txt"), None);
    assert_eq!(read(root.path(), "notes.txt").as_deref(), Some("v0\n"));
    assert_eq!(fs::read(&original_path).unwrap(), original);
}

#[test]
fn the_checkpoints_of_a_prompt_job_name_the_job() {
    let root = TempDir::new().unwrap();
    let server = ScriptedServer::start(Script::new(
        KIND,
        vec![write("report.txt", "all well"), Reply::text("written")],
    ))
    .unwrap();
    fs::write(
        root.path().join("toolbelt.toml"),
        format!(
            "[channels.local]\nkind = \"file\"\n[agent]\nprovider = \"openai\"\nmodel = \"scripted-model\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let toolbelt = |args: &[&str]| {
        let mut cmd = command(root.path(), args);
        for var in [
            "TOOLBELT_AGENT_PROVIDER",
            "TOOLBELT_AGENT_MODEL",
            "OPENAI_BASE_URL",
            "OPENAI_API_KEY",
        ] {
            cmd.env_remove(var);
        }
        let run = finish(
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap(),
            args,
        );
        ok(&run);
    };
    toolbelt(&[
        "cron",
        "add",
        "nightly-report",
        "--schedule",
        "every 1s",
        "--prompt",
        "Write report.txt",
        "--channel",
        "local",
    ]);
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    toolbelt(&["cron", "run", "--once"]);
    assert_eq!(read(root.path(), "report.txt").as_deref(), Some("all well"));
    let files = runs(root.path());
    assert_eq!(files.len(), 1);
    let taken = checkpoints_of(root.path(), &files[0]);
    assert_eq!(taken.len(), 1, "{taken:?}");
    assert_eq!(
        taken[0].1,
        Origin {
            job: Some("nightly-report".into()),
            ..Origin::new("cron").in_turn(id_of(&files[0]), 1)
        }
    );
}
